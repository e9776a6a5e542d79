//! What a sandboxed command may read in the home directory: an allow-list.
//!
//! A home directory is where every tool a developer installs keeps its tokens, keys and
//! sessions, and the next tool is on no list of secrets. So under `$HOME` reads go by the
//! opposite list: the entries the tools a command runs need in order to *run* — toolchains and
//! their caches, shell, editor and git configuration, language package caches — each with its
//! reason. Every other dot entry of a home directory, and every entry of the containers
//! (`~/.config`, `~/.local`, `~/.local/share`, `~/.local/state`, `~/.cache`, `~/.var/app`,
//! `~/snap`) that is not listed, is hidden. The containers are looked for where the `XDG_*`
//! variables move them too.
//!
//! The catalogue of secrets still applies inside an allowed entry (`~/.cargo/credentials.toml`
//! stays hidden although `~/.cargo` is readable).

/// One readable entry: a `~/` path of a home entry or of an entry of a container, and why a
/// command needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Readable {
    pub path: &'static str,
    pub why: &'static str,
}

const fn r(path: &'static str, why: &'static str) -> Readable {
    Readable { path, why }
}

/// Directories whose entries are filtered through [`HOME_READABLE`]: for `~` its dot entries
/// only (its plain entries — projects, documents — stay readable), for the others every entry.
/// A container is itself readable (as a listing) from the one that holds it.
pub const HOME_CONTAINERS: &[&str] = &[
    "~",
    "~/.config",
    "~/.local",
    "~/.local/share",
    "~/.local/state",
    "~/.cache",
    "~/.var",
    "~/.var/app",
    "~/snap",
];

/// The containers the `XDG_*` variables move, and the variable that moves each.
pub const RELOCATED_CONTAINERS: &[(&str, &str)] = &[
    ("~/.config", "XDG_CONFIG_HOME"),
    ("~/.local/share", "XDG_DATA_HOME"),
    ("~/.cache", "XDG_CACHE_HOME"),
    ("~/.local/state", "XDG_STATE_HOME"),
];

/// The entries readable under a home directory.
pub const HOME_READABLE: &[Readable] = &[
    // Shells and the terminal.
    r("~/.profile", "login shells read it"),
    r("~/.bashrc", "bash reads it"),
    r("~/.bash_profile", "bash login shells read it"),
    r("~/.bash_login", "bash login shells read it"),
    r("~/.bash_logout", "bash reads it when a login shell exits"),
    r("~/.bash_aliases", "Debian's .bashrc sources it"),
    r("~/.bash_completion", "bash-completion sources it"),
    r("~/.bashrc.d", "Fedora's .bashrc sources every file in it"),
    r("~/.profile.d", "start-up snippets a .profile sources"),
    r("~/.inputrc", "readline's key bindings"),
    r("~/.zshrc", "zsh reads it"),
    r("~/.zshenv", "zsh reads it"),
    r("~/.zprofile", "zsh login shells read it"),
    r("~/.zlogin", "zsh login shells read it"),
    r("~/.zlogout", "zsh reads it when a login shell exits"),
    r("~/.zsh", "zsh functions and plugins"),
    r("~/.oh-my-zsh", "Oh My Zsh, which .zshrc sources"),
    r("~/.p10k.zsh", "powerlevel10k's prompt, which .zshrc sources"),
    r("~/.kshrc", "ksh reads it"),
    r("~/.mkshrc", "mksh reads it"),
    r("~/.cshrc", "csh reads it"),
    r("~/.tcshrc", "tcsh reads it"),
    r("~/.dircolors", "ls colours, which .bashrc loads"),
    r("~/.hushlogin", "silences the login banner"),
    r("~/.terminfo", "terminal descriptions"),
    r("~/.tmux.conf", "tmux's configuration"),
    r("~/.screenrc", "screen's configuration"),
    r("~/.selected_editor", "Debian's choice of editor"),
    r("~/.config/fish", "fish's configuration"),
    r("~/.config/starship.toml", "the starship prompt"),
    r("~/.config/tmux", "tmux's configuration"),
    r("~/.config/htop", "htop's configuration"),
    r("~/.config/procps", "top's configuration"),
    r("~/.config/bat", "bat's configuration"),
    r("~/.config/ripgrep", "ripgrep's configuration"),
    r("~/.config/fd", "fd's ignore file"),
    r("~/.config/less", "less's key bindings"),
    r("~/.config/lesskey", "less's key bindings"),
    r("~/.config/direnv", "direnv's configuration (its allow list is data)"),
    r("~/.config/mise", "mise's global tool versions"),
    r("~/.config/fontconfig", "font configuration"),
    r("~/.config/user-dirs.dirs", "the XDG user directories"),
    r("~/.config/mimeapps.list", "which program opens a file type"),
    r("~/.local/share/fonts", "fonts"),
    r("~/.local/share/bash-completion", "bash completions"),
    r("~/.local/share/zsh", "zsh completions and plugins"),
    r("~/.local/share/fish", "fish's functions and completions"),
    r("~/.local/share/applications", "desktop entries, which xdg-open reads"),
    r("~/.local/share/mime", "file type database"),
    r("~/.local/share/man", "manual pages"),
    r("~/.fonts", "fonts"),
    // Editors.
    r("~/.editorconfig", "editor settings every editor reads"),
    r("~/.vimrc", "vim's configuration"),
    r("~/.vim", "vim's plugins"),
    r("~/.gvimrc", "gvim's configuration"),
    r("~/.exrc", "vi's configuration"),
    r("~/.nanorc", "nano's configuration"),
    r("~/.emacs", "Emacs's configuration"),
    r("~/.emacs.el", "Emacs's configuration"),
    r("~/.emacs.d", "Emacs's configuration and packages"),
    r("~/.config/nvim", "Neovim's configuration"),
    r("~/.local/share/nvim", "Neovim's plugins"),
    r("~/.config/helix", "Helix's configuration"),
    r("~/.config/micro", "micro's configuration"),
    r("~/.config/emacs", "Emacs's configuration"),
    r("~/.config/kak", "Kakoune's configuration"),
    // Git and other version control.
    r("~/.gitconfig", "git's global configuration"),
    r("~/.gitignore", "a global excludes file"),
    r("~/.gitignore_global", "a global excludes file"),
    r("~/.gitattributes", "global attributes"),
    r("~/.gitmessage", "a commit template"),
    r("~/.git-templates", "templates for git init"),
    r("~/.config/git", "git's global configuration, ignore and attributes"),
    r("~/.config/lazygit", "lazygit's configuration"),
    r("~/.config/jj", "Jujutsu's configuration"),
    r("~/.hgrc", "Mercurial's configuration"),
    r("~/.config/hg", "Mercurial's configuration"),
    r("~/.pre-commit-config.yaml", "pre-commit's configuration"),
    r("~/.cache/pre-commit", "pre-commit's hook environments"),
    // Rust.
    r("~/.cargo", "cargo, its registry and the installed binaries"),
    r("~/.rustup", "the Rust toolchains"),
    r("~/.cache/sccache", "sccache's compiler cache"),
    // C and C++.
    r("~/.ccache", "ccache's compiler cache"),
    r("~/.cache/ccache", "ccache's compiler cache"),
    r("~/.config/ccache", "ccache's configuration"),
    r("~/.conan2", "Conan's packages"),
    r("~/.cache/clangd", "clangd's index"),
    r("~/.vcpkg", "vcpkg's packages"),
    r("~/.cache/vcpkg", "vcpkg's binary cache"),
    // JavaScript.
    r("~/.npm", "npm's cache (its tokens live in .npmrc)"),
    r("~/.npm-global", "npm's global packages"),
    r("~/.npm-packages", "npm's global packages"),
    r("~/.node-gyp", "node-gyp's headers"),
    r("~/.cache/node-gyp", "node-gyp's headers"),
    r("~/.cache/node", "Node's compile cache"),
    r("~/.nvm", "nvm's Node versions"),
    r("~/.fnm", "fnm's Node versions"),
    r("~/.local/share/fnm", "fnm's Node versions"),
    r("~/.volta", "Volta's tools"),
    r("~/.n", "n's Node versions"),
    r("~/.yarn", "Yarn's cache and global packages"),
    r("~/.yarnrc", "Yarn 1's configuration"),
    r("~/.cache/yarn", "Yarn's cache"),
    r("~/.config/yarn", "Yarn's global packages"),
    r("~/.pnpm-store", "pnpm's store"),
    r("~/.local/share/pnpm", "pnpm and its store"),
    r("~/.cache/pnpm", "pnpm's cache"),
    r("~/.config/pnpm", "pnpm's configuration"),
    r("~/.bun", "Bun and its global packages"),
    r("~/.deno", "Deno and its cache"),
    r("~/.cache/deno", "Deno's cache"),
    r("~/.cache/typescript", "TypeScript's type cache"),
    r("~/.cache/ms-playwright", "Playwright's browsers"),
    r("~/.cache/Cypress", "Cypress's binary"),
    r("~/.cache/puppeteer", "Puppeteer's browsers"),
    r("~/.cache/electron", "Electron's binaries"),
    r("~/.cache/esbuild", "esbuild's binaries"),
    r("~/.cache/turbo", "Turborepo's cache"),
    // Python.
    r("~/.pyenv", "pyenv's Pythons"),
    r("~/.local/bin", "programs installed for the user (pip, pipx, uv)"),
    r("~/.local/lib", "Python packages installed for the user"),
    r("~/.local/include", "headers installed for the user"),
    r("~/.local/opt", "programs installed for the user"),
    r("~/.local/share/uv", "uv's Pythons and tools"),
    r("~/.local/share/pipx", "pipx's environments"),
    r("~/.local/share/virtualenvs", "pipenv's environments"),
    r("~/.local/share/pdm", "PDM's Pythons and tools"),
    r("~/.local/share/hatch", "Hatch's environments"),
    r("~/.local/share/jupyter", "Jupyter's kernels"),
    r("~/.cache/pip", "pip's cache"),
    r("~/.cache/uv", "uv's cache"),
    r("~/.cache/pypoetry", "Poetry's environments and cache"),
    r("~/.local/share/pypoetry", "Poetry as its installer puts it"),
    r("~/.local/share/claude", "Claude Code as its installer puts it"),
    r("~/.local/share/cursor-agent", "cursor-agent as its installer puts it"),
    r("~/.rye", "Rye's Pythons and tools"),
    r("~/.cache/pdm", "PDM's cache"),
    r("~/.cache/hatch", "Hatch's cache"),
    r("~/.cache/pipenv", "pipenv's cache"),
    r("~/.cache/mypy", "mypy's cache"),
    r("~/.cache/black", "black's cache"),
    r("~/.cache/ruff", "ruff's cache"),
    r("~/.cache/matplotlib", "matplotlib's font cache"),
    r("~/.config/uv", "uv's configuration"),
    r("~/.config/ruff", "ruff's configuration"),
    r("~/.config/flake8", "flake8's configuration"),
    r("~/.config/pycodestyle", "pycodestyle's configuration"),
    r("~/.config/yapf", "yapf's configuration"),
    r("~/.config/matplotlib", "matplotlib's configuration"),
    r("~/.config/pypoetry", "Poetry's configuration (its passwords are in a keyring)"),
    r("~/.conda", "conda's environments"),
    r("~/.condarc", "conda's configuration"),
    r("~/.mambarc", "mamba's configuration"),
    r("~/.pythonrc", "Python's start-up file"),
    r("~/.pylintrc", "pylint's configuration"),
    r("~/.jupyter", "Jupyter's configuration"),
    r("~/.ipython", "IPython's configuration"),
    r("~/.keras", "Keras's datasets and models"),
    r("~/.cache/torch", "PyTorch's downloaded models"),
    r("~/.cache/huggingface", "Hugging Face's model cache (its token is hidden)"),
    // Go.
    r("~/.cache/go-build", "go's build cache"),
    r("~/.cache/golangci-lint", "golangci-lint's cache"),
    r("~/.config/go", "go's environment file (go env -w)"),
    r("~/.goenv", "goenv's Go versions"),
    r("~/.gvm", "gvm's Go versions"),
    // JVM.
    r("~/.m2", "Maven's repository (its passwords are in settings.xml)"),
    r("~/.gradle", "Gradle's caches and wrapper"),
    r("~/.sdkman", "SDKMAN!'s JDKs and tools"),
    r("~/.jdks", "JDKs an IDE downloaded"),
    r("~/.java", "Java's user preferences"),
    r("~/.cache/coursier", "Coursier's cache"),
    r("~/.coursier", "Coursier's cache"),
    r("~/.lein", "Leiningen"),
    r("~/.clojure", "Clojure's tools"),
    r("~/.config/clojure", "Clojure's tools"),
    r("~/.konan", "Kotlin/Native's toolchains"),
    r("~/.cache/JNA", "JNA's native libraries"),
    // Ruby.
    r("~/.gem", "gems installed for the user"),
    r("~/.gemrc", "gem's configuration"),
    r("~/.rbenv", "rbenv's Rubies"),
    r("~/.rvm", "RVM's Rubies"),
    r("~/.rubies", "chruby's Rubies"),
    r("~/.irbrc", "irb's configuration"),
    r("~/.bundle", "Bundler's cache (its credentials are hidden)"),
    r("~/.local/share/gem", "gems installed for the user"),
    r("~/.cache/solargraph", "solargraph's cache"),
    // Other languages and their tools.
    r("~/.ghcup", "GHCup's Haskell toolchains"),
    r("~/.cabal", "Cabal's packages"),
    r("~/.stack", "Stack's toolchains"),
    r("~/.cache/cabal", "Cabal's packages"),
    r("~/.config/cabal", "Cabal's configuration"),
    r("~/.local/state/cabal", "Cabal's store"),
    r("~/.opam", "opam's OCaml switches"),
    r("~/.elan", "Lean's toolchains"),
    r("~/.dotnet", "the .NET SDK and tools"),
    r("~/.nuget", "NuGet's packages (its configuration is hidden)"),
    r("~/.local/share/NuGet", "NuGet's cache"),
    r("~/.pub-cache", "Dart's packages"),
    r("~/.swiftpm", "SwiftPM's caches"),
    r("~/.julia", "Julia's packages"),
    r("~/.R", "R's build settings"),
    r("~/.Rprofile", "R's start-up file"),
    r("~/.local/share/renv", "renv's packages"),
    r("~/.cpan", "CPAN's build directory"),
    r("~/.cpanm", "cpanm's build directory"),
    r("~/.luarocks", "LuaRocks' packages"),
    r("~/.nimble", "Nimble's packages"),
    r("~/.zig", "Zig's toolchains"),
    r("~/.wasmer", "Wasmer's runtime"),
    r("~/.wasmtime", "Wasmtime's runtime"),
    r("~/.cache/zig", "Zig's cache"),
    r("~/.mix", "Elixir's archives"),
    r("~/.hex", "Hex's packages"),
    r("~/.cache/rebar3", "rebar3's cache"),
    r("~/.platformio", "PlatformIO's toolchains"),
    r("~/.arduino15", "Arduino's cores"),
    r("~/.espressif", "ESP-IDF's toolchains"),
    // Version managers and build systems.
    r("~/.asdf", "asdf's tools"),
    r("~/.tool-versions", "asdf's and mise's global versions"),
    r("~/.local/share/mise", "mise's tools"),
    r("~/.cache/mise", "mise's cache"),
    r("~/.local/state/mise", "mise's trusted configurations"),
    r("~/.proto", "proto's tools"),
    r("~/.aqua", "aqua's tools"),
    r("~/.nix-profile", "Nix's user profile"),
    r("~/.nix-defexpr", "Nix's channels"),
    r("~/.local/state/nix", "Nix's user profile"),
    r("~/.cache/nix", "Nix's evaluation cache"),
    r("~/.linuxbrew", "Homebrew on Linux"),
    r("~/.bazelrc", "Bazel's configuration"),
    r("~/.cache/bazel", "Bazel's output base"),
    r("~/.cache/bazelisk", "Bazelisk's Bazel versions"),
    r("~/.cache/buck", "Buck's cache"),
    r("~/.cmake", "CMake's package registry"),
    r("~/.cache/cmake", "CMake's cache"),
    r("~/.cache/meson", "Meson's cache"),
    r("~/.earthly", "Earthly's configuration"),
    r("~/.docker", "docker's plugins and contexts (its credentials are hidden)"),
    r("~/.cache/helm", "Helm's chart cache (its repository passwords are hidden)"),
    r("~/.local/share/helm", "Helm's plugins"),
    r("~/.krew", "kubectl's plugins"),
    r("~/.tflint.d", "TFLint's plugins"),
    r("~/.ansible", "Ansible's collections"),
    r("~/.vagrant.d", "Vagrant's boxes"),
    r("~/.local/share/containers", "Podman's images and containers"),
    r("~/.config/containers", "Podman's configuration"),
    r("~/.cache/act", "act's actions"),
    r("~/.cache/shellcheck", "ShellCheck's cache"),
    r("~/.cache/fontconfig", "fontconfig's cache"),
    r("~/.cache/mesa_shader_cache", "Mesa's shader cache"),
    r("~/.cache/tldr", "tldr's pages"),
    r("~/.wget-hsts", "wget's HSTS list"),
    r("~/.curlrc", "curl's configuration"),
    r("~/.wgetrc", "wget's configuration"),
    r("~/.gdbinit", "gdb's configuration"),
    r("~/.config/gdb", "gdb's configuration"),
    r("~/.lldbinit", "lldb's configuration"),
    r("~/.valgrindrc", "valgrind's configuration"),
    r("~/.clang-format", "clang-format's style"),
    r("~/.clang-tidy", "clang-tidy's checks"),
    r("~/.config/clangd", "clangd's configuration"),
    r("~/.prettierrc", "prettier's configuration"),
    r("~/.eslintrc", "ESLint's configuration"),
    r("~/.eslintrc.json", "ESLint's configuration"),
    r("~/.mailcap", "which program shows a file type"),
    r("~/.mime.types", "file types by extension"),
    r("~/.XCompose", "compose key sequences"),
    r("~/.Xresources", "X resources"),
    r("~/.xinputrc", "the input method"),
];

/// Whether `logical` (a `~/` path) is on the list or is a container.
pub fn home_entry_readable(logical: &str) -> bool {
    HOME_CONTAINERS.contains(&logical) || HOME_READABLE.iter().any(|entry| entry.path == logical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_entry_lies_directly_in_a_container_and_is_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for entry in HOME_READABLE {
            assert!(seen.insert(entry.path), "{} listed twice", entry.path);
            let (container, name) = entry.path.rsplit_once('/').expect("a ~/ path");
            assert!(HOME_CONTAINERS.contains(&container), "{} is in no container", entry.path);
            assert!(!name.is_empty() && !entry.why.is_empty(), "{}", entry.path);
            assert!(!HOME_CONTAINERS.contains(&entry.path), "{} is a container", entry.path);
        }
    }

    #[test]
    fn docs_secrets_md_lists_every_entry() {
        let docs = include_str!("../../docs/secrets.md");
        for entry in HOME_READABLE {
            let row = format!("| `{}` | {} |", entry.path, entry.why);
            assert!(docs.contains(&row), "docs/secrets.md lacks {row}");
        }
    }

    #[test]
    fn no_listed_entry_is_a_catalogued_secret() {
        for entry in HOME_READABLE {
            assert!(
                !crate::SECRET_FILES.iter().any(|secret| secret.path == entry.path),
                "{} is on the list and in the catalogue of secrets",
                entry.path
            );
        }
    }
}
