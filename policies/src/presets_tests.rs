use super::*;
use pretty_assertions::assert_eq;

fn file(path: &str, text: &str) -> Option<ConfigFile> {
    Some(ConfigFile {
        path: PathBuf::from(path),
        text: text.to_owned(),
        visibility: Visibility::Hidden,
    })
}

fn not_secret(settings: &[&str]) -> std::collections::BTreeSet<String> {
    settings.iter().map(|s| (*s).to_owned()).collect()
}

fn env_of(vars: &[(&str, &str)]) -> BTreeMap<String, String> {
    vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn var<'a>(plan: &'a PresetPlan, name: &str) -> Option<&'a str> {
    plan.env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

#[test]
fn with_nothing_configured_each_client_gets_its_default_hosts_and_a_cache() {
    let cache = Path::new("/home/u/.cordon/cache");
    let npm = plan_preset(Preset::Npm, &ClientConfigs::default(), cache).unwrap();
    assert_eq!(npm.hosts, vec!["registry.npmjs.org:443"]);
    assert_eq!(npm.cache, cache.join("npm"));
    assert_eq!(var(&npm, "npm_config_cache"), Some("/home/u/.cordon/cache/npm"));
    assert_eq!(var(&npm, "npm_config_registry"), Some("https://registry.npmjs.org/"));
    let pip = plan_preset(Preset::Pip, &ClientConfigs::default(), cache).unwrap();
    assert_eq!(pip.hosts, vec!["pypi.org:443", "files.pythonhosted.org:443"]);
    assert_eq!(var(&pip, "PIP_CACHE_DIR"), Some("/home/u/.cordon/cache/pip"));
    assert_eq!(var(&pip, "PIP_INDEX_URL"), None);
    let cargo = plan_preset(Preset::Cargo, &ClientConfigs::default(), cache).unwrap();
    assert_eq!(cargo.hosts, vec!["crates.io:443", "index.crates.io:443", "static.crates.io:443"]);
    assert_eq!(var(&cargo, "CARGO_HOME"), Some("/home/u/.cordon/cache/cargo"));
    assert_eq!(cargo.carried_config.as_deref(), Some(""));
}

#[test]
fn npm_takes_the_registries_of_the_users_npmrc_without_tokens_or_passwords() {
    let configs = ClientConfigs {
        npmrc: file(
            "/home/u/.npmrc",
            "; comment\nregistry = \"https://bob:hunter2@npm.corp.example:8443/repo/\"\n\
             //npm.corp.example:8443/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n\
             @acme:registry=https://pkgs.acme.example/npm/\nalways-auth=true\n\
             @corp:registry=https://npm.corp.example/${NPM_PATH_TOKEN}/\n",
        ),
        env: env_of(&[("NPM_PATH_TOKEN", "plainlookingvalue")]),
        not_secret: not_secret(&["npm.registry", "npm.@acme:registry", "npm.@corp:registry"]),
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Npm, &configs, Path::new("/c")).unwrap();
    assert_eq!(
        plan.hosts,
        vec!["npm.corp.example:8443", "pkgs.acme.example:443", "npm.corp.example:443"]
    );
    // A URL built from a variable is not passed on: the variable may be a token.
    assert_eq!(var(&plan, "npm_config_@corp:registry"), None);
    assert_eq!(var(&plan, "npm_config_registry"), Some("https://npm.corp.example:8443/repo/"));
    assert_eq!(var(&plan, "npm_config_@acme:registry"), Some("https://pkgs.acme.example/npm/"));
    let everything = format!("{:?}", plan.env);
    for secret in ["hunter2", "npm_abc", "plainlookingvalue"] {
        assert!(!everything.contains(secret), "{everything}");
    }
    assert!(plan.notes.iter().any(|n| n.contains("credentials")), "{:?}", plan.notes);
}

#[test]
fn the_users_npm_config_registry_variable_wins_over_the_file() {
    let configs = ClientConfigs {
        npmrc: file("/home/u/.npmrc", "registry=https://file.example/\n"),
        env: env_of(&[("NPM_CONFIG_REGISTRY", "https://env.example/")]),
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Npm, &configs, Path::new("/c")).unwrap();
    assert_eq!(plan.hosts, vec!["env.example:443"]);
}

#[test]
fn a_registry_that_is_not_http_is_an_error_naming_the_file() {
    let configs = ClientConfigs {
        npmrc: file("/home/u/.npmrc", "registry=ftp://x.example/\n"),
        ..ClientConfigs::default()
    };
    let error = plan_preset(Preset::Npm, &configs, Path::new("/c")).unwrap_err();
    assert_eq!(error.path, PathBuf::from("/home/u/.npmrc"));
}

#[test]
fn pip_reads_index_settings_from_its_files_in_order_and_the_environment_last() {
    let configs = ClientConfigs {
        pip_confs: vec![
            ConfigFile {
                path: "/etc/pip.conf".into(),
                text: "[global]\ncert = /etc/ssl/x.pem\nindex-url = https://old.example/simple\n"
                    .into(),
                visibility: Visibility::Readable,
            },
            ConfigFile {
                visibility: Visibility::Hidden,
                path: "/home/u/.config/pip/pip.conf".into(),
                text: "[global]\nindex_url = https://me:pw@mirror.example/simple\n\
                       extra-index-url =\n    https://extra.example/simple\n    \
                       https://pypi.org/simple\n[install]\ntrusted-host = mirror.example\n"
                    .into(),
            },
        ],
        not_secret: not_secret(&["pip.index-url", "pip.extra-index-url", "pip.trusted-host"]),
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Pip, &configs, Path::new("/c")).unwrap();
    assert_eq!(
        plan.hosts,
        vec![
            "mirror.example:443",
            "extra.example:443",
            "pypi.org:443",
            "files.pythonhosted.org:443"
        ]
    );
    assert_eq!(var(&plan, "PIP_INDEX_URL"), Some("https://mirror.example/simple"));
    assert_eq!(
        var(&plan, "PIP_EXTRA_INDEX_URL"),
        Some("https://extra.example/simple https://pypi.org/simple")
    );
    assert_eq!(var(&plan, "PIP_TRUSTED_HOST"), Some("mirror.example"));
    let with_env = ClientConfigs {
        env: env_of(&[("PIP_INDEX_URL", "http://10.0.0.5:3141/root/pypi")]),
        ..configs
    };
    let plan = plan_preset(Preset::Pip, &with_env, Path::new("/c")).unwrap();
    assert_eq!(plan.hosts[0], "10.0.0.5:3141");
}

#[test]
fn cargo_takes_registries_and_source_replacement_and_carries_no_token() {
    let configs = ClientConfigs {
        cargo_config: file(
            "/home/u/.cargo/config.toml",
            "[registry]\ntoken = \"cio_secret\"\n\
             [registries.corp]\nindex = \"sparse+https://cargo.corp.example/index/\"\n\
             token = \"corp_secret\"\n\
             [source.crates-io]\nreplace-with = \"mirror\"\n\
             [source.mirror]\nregistry = \"sparse+https://mirror.example/crates/\"\n\
             [http]\nproxy = \"http://proxy.corp:3128\"\n[build]\njobs = 2\n",
        ),
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Cargo, &configs, Path::new("/c")).unwrap();
    assert_eq!(plan.hosts, vec!["cargo.corp.example:443", "mirror.example:443"]);
    let carried = plan.carried_config.unwrap();
    assert!(!carried.contains("secret") && !carried.contains("proxy.corp"), "{carried}");
    assert!(carried.contains("jobs = 2") && carried.contains("replace-with"), "{carried}");
    assert!(plan.notes.iter().any(|n| n.contains("registry.token")), "{:?}", plan.notes);
}

#[test]
fn a_cache_path_names_its_preset() {
    let home = Path::new("/home/u");
    let npm = Path::new("/home/u/.npm/_cacache/tmp");
    assert_eq!(preset_for_cache_path(npm, home), Some(Preset::Npm));
    let index = Path::new("/home/u/.cargo/registry/index/x/.cache/sh/el");
    assert_eq!(preset_for_cache_path(index, home), Some(Preset::Cargo));
    assert_eq!(
        preset_for_cache_path(Path::new("/home/u/.cache/pip/http"), home),
        Some(Preset::Pip)
    );
    assert_eq!(preset_for_cache_path(Path::new("/home/u/.cargo/bin"), home), None);
    assert_eq!(Preset::from_name("npm"), Some(Preset::Npm));
    assert_eq!(Preset::from_name("NPM"), None);
}

#[test]
fn registry_urls_are_read_strictly() {
    let url = RegistryUrl::parse("sparse+https://u:p@[::1]:8080/x?y").unwrap();
    assert_eq!((url.host.as_str(), url.port, url.had_credentials), ("[::1]", 8080, true));
    assert_eq!(url.without_credentials, "https://[::1]:8080/x?y");
    for bad in ["ssh://git@github.com/x", "https://", "https://a b/", "https://h:0/", "h.example"] {
        assert_eq!(RegistryUrl::parse(bad), None, "{bad}");
    }
}

/// Hosted registries put the token in the path or the query, where no vendor prefix marks it.
#[test]
fn a_token_in_a_registry_urls_path_or_query_is_never_passed_on() {
    for url in [
        "https://pypi.fury.io/xK3v9Qp2LmN7rT5wYz8aBc/acme/",
        "https://dl.cloudsmith.io/AbCdEf1234567890/acme/repo/python/simple/",
        "https://host.example/t/8f14e45fceea167a5a36dedd4b0f8a1f/simple/",
        "https://h.example/simple/?key=hunter2hunter2",
        "https://npm-proxy.fury.io/xK3v9Qp2LmN7rT5w/acme/",
    ] {
        assert!(super::holds_a_token(url), "{url}");
    }
    for url in [
        "https://pypi.org/simple/",
        "https://registry.npmjs.org/",
        "https://artifactory.corp.example/api/npm/npm-remote-2023/",
        "https://pkgs.dev.azure.com/org/_packaging/feed/pypi/simple/",
        "https://index.crates.io/",
        "https://registry.example:8443/",
    ] {
        assert!(!super::holds_a_token(url), "{url}");
    }
}

/// A value read from a file hidden from the sandbox stays out whatever it looks like — the
/// shapes a guess at tokens missed, and random ones — until the user names the setting as not
/// secret; a readable site-wide file's values and the user's own variables still pass.
#[test]
fn nothing_read_from_a_hidden_file_enters_the_sandbox_whatever_its_shape() {
    let mut shapes = vec![
        "https://pkgs.example/simple/6f1c2a9e-1b3d-4c5e-9f7a-2b8c4d6e8f00/".to_owned(),
        "https://pkgs.example/QwErTyUiOpAsDfGh/acme/simple/".to_owned(),
        "https://pkgs.example/t/Zk3d-9dQx_7LpMnB2/simple/".to_owned(),
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20 {
        let word: String = (0..14)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
                alphabet[(seed % alphabet.len() as u64) as usize] as char
            })
            .collect();
        shapes.push(format!("https://pkgs.example/{word}/simple/"));
    }
    for url in &shapes {
        let token = url.trim_start_matches("https://pkgs.example/");
        let pip = ClientConfigs {
            pip_confs: vec![ConfigFile {
                path: "/home/u/.config/pip/pip.conf".into(),
                text: format!(
                    "[global]\nindex-url = {url}\nextra-index-url = {url}x/\n\
                     trusted-host = pkgs.example\n"
                ),
                visibility: Visibility::Hidden,
            }],
            ..ClientConfigs::default()
        };
        let plan = plan_preset(Preset::Pip, &pip, Path::new("/c")).unwrap();
        let everything = format!("{:?}", plan.env);
        assert!(!everything.contains("pkgs.example"), "{url}: {everything}");
        assert!(!everything.contains(token), "{url}: {everything}");
        assert!(
            plan.notes
                .iter()
                .any(|n| n.contains("\"pip.index-url\" to preset_settings_not_secret")),
            "{:?}",
            plan.notes
        );
        let npm = ClientConfigs {
            npmrc: file("/home/u/.npmrc", &format!("registry={url}\n@acme:registry={url}\n")),
            ..ClientConfigs::default()
        };
        let plan = plan_preset(Preset::Npm, &npm, Path::new("/c")).unwrap();
        let everything = format!("{:?}", plan.env);
        assert!(!everything.contains("pkgs.example"), "{url}: {everything}");
    }
    // Named as not secret, a plain URL passes; a readable file's and the user's own do anyway.
    let named = ClientConfigs {
        npmrc: file("/home/u/.npmrc", "registry=https://npm.corp.example/repo/\n"),
        not_secret: not_secret(&["npm.registry"]),
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Npm, &named, Path::new("/c")).unwrap();
    assert_eq!(var(&plan, "npm_config_registry"), Some("https://npm.corp.example/repo/"));
    let readable = ClientConfigs {
        pip_confs: vec![ConfigFile {
            path: "/etc/pip.conf".into(),
            text: "[global]\nindex-url = https://mirror.example/simple\n".into(),
            visibility: Visibility::Readable,
        }],
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Pip, &readable, Path::new("/c")).unwrap();
    assert_eq!(var(&plan, "PIP_INDEX_URL"), Some("https://mirror.example/simple"));
    let default_named = ClientConfigs {
        npmrc: file("/home/u/.npmrc", "registry=https://registry.npmjs.org/\n"),
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Npm, &default_named, Path::new("/c")).unwrap();
    assert_eq!(var(&plan, "npm_config_registry"), Some("https://registry.npmjs.org/"));
    assert!(plan.notes.is_empty(), "{:?}", plan.notes); // On the default host, anything past the default index may be a token: a path, a query,
    // a fragment, a port; and a list is judged whole.
    for url in [
        "https://registry.npmjs.org/6f1c2a9e-1b3d-4c5e-9f7a-2b8c4d6e8f00/",
        "https://registry.npmjs.org/?t=abc",
        "https://registry.npmjs.org:443/x",
    ] {
        let npm = ClientConfigs {
            npmrc: file("/home/u/.npmrc", &format!("registry={url}\n")),
            ..ClientConfigs::default()
        };
        let plan = plan_preset(Preset::Npm, &npm, Path::new("/c")).unwrap();
        assert_eq!(var(&plan, "npm_config_registry"), None, "{url}");
    }
    let pip = ClientConfigs {
        pip_confs: vec![ConfigFile {
            path: "/home/u/.config/pip/pip.conf".into(),
            text: "[global]\nindex-url = https://PyPI.org:443/simple#frag-secret\n\
                   extra-index-url = https://pypi.org/simple https://priv.example/tok123/\n"
                .into(),
            visibility: Visibility::Hidden,
        }],
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Pip, &pip, Path::new("/c")).unwrap();
    let everything = format!("{:?}", plan.env);
    assert!(!everything.contains("frag-secret") && !everything.contains("priv"), "{everything}");
    // A scope's name from the hidden file is the file's too, even with the default registry.
    let scoped = ClientConfigs {
        npmrc: file("/home/u/.npmrc", "@tok3nScope:registry=https://registry.npmjs.org/\n"),
        ..ClientConfigs::default()
    };
    let plan = plan_preset(Preset::Npm, &scoped, Path::new("/c")).unwrap();
    assert!(!format!("{:?}", plan.env).contains("tok3n"), "{:?}", plan.env);
}

#[test]
fn the_settings_that_may_be_named_as_not_secret_are_known() {
    for name in ["npm.registry", "npm.@acme:registry", "pip.index-url", "pip.trusted-host"] {
        assert!(known_hidden_setting(name), "{name}");
    }
    for name in ["npm.@:registry", "npm._authToken", "pip.cert", "cargo.registry", "registry"] {
        assert!(!known_hidden_setting(name), "{name}");
    }
}
