mod bash_differential;
mod everyday_corpus;
mod known_safe_property;
