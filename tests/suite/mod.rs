mod util;

mod cli;
mod exec;
mod executor;
mod exit_codes;
mod filesystem;
mod hardening;
mod mount_view;
mod network;
mod process;
