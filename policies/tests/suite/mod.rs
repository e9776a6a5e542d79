mod bash_differential;
mod known_safe_property;
