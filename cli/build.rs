//! Puts the git commit into `cordon --version` (`unknown` outside a git checkout, e.g. a
//! packaged source tarball), and links the unwinder into the binary on glibc (below).

use std::path::{Path, PathBuf};

fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=CORDON_COMMIT={commit}");
    println!("cargo:rerun-if-changed=../.git/HEAD");
    println!("cargo:rerun-if-changed=../.git/refs/heads");
    link_unwinder_statically();
}

/// On linux-gnu, std links the unwinder as `-lgcc_s`, so every start of cordon loads
/// `libgcc_s.so.1`, whose constructor probes the CPU with a series of CPUID instructions. In a
/// VM each CPUID traps to the hypervisor, so that probe is a measurable part of every
/// `cordon exec` and helper launch (`docs/performance.md`, `bench/ab.py`). std only needs the
/// unwinder for
/// backtraces (cordon builds with `panic = "abort"`), and gcc ships the same unwinder as the
/// static `libgcc_eh.a`, which is what `gcc -static-libgcc` links. A copy of it named
/// `libgcc_s.a` in a directory searched before the system's makes `-lgcc_s` resolve to it.
/// When the linker driver does not know the archive, nothing changes.
fn link_unwinder_statically() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let static_crt = var("CARGO_CFG_TARGET_FEATURE").split(',').any(|f| f == "crt-static");
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" || static_crt {
        return;
    }
    // `cc` is the host's compiler: cross builds ask the linker their target configured, or
    // keep the default.
    let linker = match std::env::var("RUSTC_LINKER") {
        Ok(linker) => linker,
        Err(_) if var("TARGET") == var("HOST") => "cc".to_owned(),
        Err(_) => return,
    };
    let Some(archive) = std::process::Command::new(&linker)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| PathBuf::from(s.trim()))
        .filter(|path| path.is_absolute() && path.is_file())
    else {
        println!("cargo:warning=libgcc_eh.a not found by {linker}: cordon loads libgcc_s.so.1");
        return;
    };
    let dir = Path::new(&var("OUT_DIR")).join("static-unwinder");
    let copied = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::copy(&archive, dir.join("libgcc_s.a")));
    if let Err(error) = copied {
        println!(
            "cargo:warning=copying {}: {error}: cordon loads libgcc_s.so.1",
            archive.display()
        );
        return;
    }
    println!("cargo:rerun-if-changed={}", archive.display());
    println!("cargo:rustc-link-search=native={}", dir.display());
}
