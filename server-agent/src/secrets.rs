//! Files that are secrets by their name alone: the web server serves a leaked key exactly as
//! it serves a page, so the judge cannot tell them apart, and names are the only defence.
//! Each class below is matched without regard to case, on the whole name and on every
//! suffix, after peeling what only says how a file is packed or rotated (`.gz`, `.1`):
//! `server.KEY`, `id_ed25519`, `db.sqlite-wal`, `backup.SQL.GZ`, `access.log.3` and
//! `index.html.Bak` are all refused. docs/SECURITY.md lists the classes.

/// A class of secrets: whole names, name suffixes, and whole-name prefixes followed by
/// digits (`core.1234`).
pub(crate) struct Class {
    /// What the class is, as the exclusion says it.
    pub(crate) name: &'static str,
    names: &'static [&'static str],
    suffixes: &'static [&'static str],
    numbered: &'static [&'static str],
    /// Whole names made of a prefix, anything, and a suffix (`docker-compose.prod.yml`).
    framed: &'static [(&'static str, &'static str)],
}

/// The name of the class of editors' and backup copies.
pub(crate) const BACKUP: &str = "an editor's or a backup copy";

/// Every class.
pub(crate) const CLASSES: &[Class] = &[
    Class {
        name: "a key or credentials",
        names: &[
            "id_rsa",
            "id_dsa",
            "id_ecdsa",
            "id_ed25519",
            "id_ecdsa_sk",
            "id_ed25519_sk",
            "identity",
            "authorized_keys",
            "authorized_keys2",
            "known_hosts",
            "netrc",
            "_netrc",
            "pgpass",
            "credentials",
            "credentials.json",
            "credentials.xml",
            "credentials.csv",
            "secrets.json",
            "secrets.yml",
            "secrets.yaml",
            "secrets.toml",
            "secret.txt",
            "master.key",
            "client_secret.json",
            "service-account.json",
            "service_account.json",
            "auth.json",
            "htpasswd",
            "passwd",
            "shadow",
            "gshadow",
            "master.passwd",
            "git-credentials",
            "s3cfg",
            "boto",
            "pypirc",
            "npmrc",
            "dockercfg",
            "wp-config.php",
        ],
        suffixes: &[
            "_rsa",
            "_dsa",
            "_ecdsa",
            "_ed25519",
            ".pem",
            ".key",
            ".p12",
            ".pfx",
            ".p8",
            ".jks",
            ".keystore",
            ".truststore",
            ".der",
            ".csr",
            ".crt",
            ".ppk",
            ".kdbx",
            ".kdb",
            ".psafe3",
            ".opvault",
            ".agilekeychain",
            ".1pif",
            ".keychain",
            ".keychain-db",
            ".ovpn",
            ".htpasswd",
            ".passwd",
            ".env",
            ".secret",
            ".secrets",
            "-key.pem",
            "_key.pem",
            ".token",
        ],
        numbered: &[],
        framed: &[],
    },
    Class {
        name: "a database or its journal",
        names: &[
            "ibdata1",
            "ib_logfile0",
            "ib_logfile1",
            "ib_buffer_pool",
            "dump.rdb",
            "appendonly.aof",
            "mysql-bin.index",
        ],
        suffixes: &[
            ".sqlite",
            ".sqlite3",
            ".sqlite-wal",
            ".sqlite-shm",
            ".sqlite-journal",
            ".db",
            ".db3",
            ".sdb",
            ".s3db",
            ".mdb",
            ".accdb",
            ".frm",
            ".ibd",
            ".myd",
            ".myi",
            ".mdf",
            ".ldf",
            ".ndf",
            ".dbf",
            ".rdb",
            ".aof",
            "-wal",
            "-shm",
            "-journal",
            ".db-wal",
            ".db-shm",
            ".db-journal",
            ".realm",
            ".ldb",
            ".leveldb",
        ],
        numbered: &["mysql-bin.", "binlog."],
        framed: &[],
    },
    Class {
        name: "a dump",
        names: &["core", "heapdump", "hs_err_pid"],
        suffixes: &[
            ".sql",
            ".dump",
            ".dmp",
            ".mdmp",
            ".hprof",
            ".core",
            ".heapsnapshot",
            ".heapdump",
            ".mysql",
            ".pgsql",
            ".pgdump",
            ".sql.bak",
        ],
        numbered: &["core.", "vgcore.", "hs_err_pid"],
        framed: &[],
    },
    Class {
        name: "a log",
        names: &[
            "error_log",
            "access_log",
            "php_errors.log",
            "nohup.out",
            "debug.log",
            "npm-debug.log",
            "yarn-error.log",
            "ssl_error_log",
            "ssl_access_log",
        ],
        suffixes: &[".log", "_log", ".trace"],
        numbered: &[],
        framed: &[],
    },
    Class {
        name: "infrastructure state",
        names: &[
            "terraform.tfstate",
            "kubeconfig",
            "kube.config",
            "vault-token",
            "vault_pass",
            "vault-pass",
            "docker-compose.yml",
            "docker-compose.yaml",
            "docker-compose.override.yml",
            "docker-compose.override.yaml",
            "compose.yml",
            "compose.yaml",
            "compose.override.yml",
            "compose.override.yaml",
            "podman-compose.yml",
            "podman-compose.yaml",
            "docker-stack.yml",
            "ansible.cfg",
            "inventory",
            "hosts.ini",
            "credentials.tfrc.json",
            "terraform.rc",
        ],
        suffixes: &[
            ".tfstate",
            ".tfstate.backup",
            ".tfvars",
            ".tfvars.json",
            ".tfplan",
            ".kubeconfig",
            ".vault",
        ],
        numbered: &[],
        framed: &[
            ("docker-compose.", ".yml"),
            ("docker-compose.", ".yaml"),
            ("compose.", ".yml"),
            ("compose.", ".yaml"),
        ],
    },
    Class {
        name: "an archive of the site (a backup)",
        names: &[],
        suffixes: &[
            ".tar", ".tgz", ".tbz2", ".txz", ".zip", ".7z", ".rar", ".war", ".ear",
        ],
        numbered: &[],
        framed: &[],
    },
    Class {
        name: "a configuration file",
        names: &[],
        suffixes: &[".ini", ".conf", ".cfg", ".config", ".cnf", ".properties"],
        numbered: &[],
        framed: &[],
    },
    Class {
        name: BACKUP,
        names: &[],
        suffixes: &[
            "~",
            ".bak",
            ".bk",
            ".backup",
            ".swp",
            ".swo",
            ".swx",
            ".swn",
            ".orig",
            ".rej",
            ".tmp",
            ".temp",
            ".old",
            ".save",
            ".sav",
            ".un~",
            ".copy",
            ".dist",
            ".kate-swp",
        ],
        numbered: &[],
        framed: &[],
    },
];

/// Suffixes that only say how a file is packed or rotated.
const PACKING: &[&str] = &[
    ".gz", ".bz2", ".xz", ".zst", ".lz", ".lzma", ".z", ".br", ".lz4",
];

/// The name without what says how it is packed or rotated (`access.log.2.gz` ->
/// `access.log`), lower case.
fn peeled(name: &str) -> String {
    let mut n = name.to_ascii_lowercase();
    loop {
        if let Some(p) = PACKING
            .iter()
            .find(|p| n.len() > p.len() && n.ends_with(*p))
        {
            n.truncate(n.len() - p.len());
            continue;
        }
        // A rotation number after a name with an extension of its own: `x.log.1`.
        if let Some((stem, last)) = n.rsplit_once('.')
            && !last.is_empty()
            && last.bytes().all(|b| b.is_ascii_digit())
            && stem.contains('.')
        {
            n.truncate(stem.len());
            continue;
        }
        return n;
    }
}

/// The class of secrets a file name is in, if it is in one; `published` are extensions the
/// webmaster publishes on purpose (`--publish-ext`, without the dot).
pub(crate) fn class_of(name: &str, published: &[String]) -> Option<&'static Class> {
    let lower = name.to_ascii_lowercase();
    let bare = lower.trim_start_matches('.').to_string();
    let peeled = peeled(&lower);
    let forms = [lower.as_str(), bare.as_str(), peeled.as_str()];
    let allowed = |suffix: &str| {
        suffix
            .strip_prefix('.')
            .is_some_and(|ext| published.iter().any(|p| p.eq_ignore_ascii_case(ext)))
    };
    CLASSES.iter().find(|c| {
        forms.iter().any(|f| {
            c.names.contains(f)
                || c.suffixes
                    .iter()
                    .any(|s| f.ends_with(s) && f.len() > s.len() && !allowed(s))
                || c.framed
                    .iter()
                    .any(|(p, x)| f.starts_with(p) && f.ends_with(x) && f.len() > p.len() + x.len())
                || c.numbered.iter().any(|p| {
                    f.strip_prefix(p).is_some_and(|rest| {
                        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
                    })
                })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str) -> Option<&'static str> {
        class_of(name, &[]).map(|c| c.name)
    }

    #[test]
    fn every_class_is_matched_without_regard_to_case_on_names_and_suffixes() {
        for (name, want) in [
            ("id_rsa", "a key or credentials"),
            ("ID_ED25519", "a key or credentials"),
            ("deploy_rsa", "a key or credentials"),
            ("server.KEY", "a key or credentials"),
            ("cert.pem", "a key or credentials"),
            ("Passwords.kdbx", "a key or credentials"),
            ("putty.PPK", "a key or credentials"),
            ("credentials", "a key or credentials"),
            ("site.env", "a key or credentials"),
            ("app.db", "a database or its journal"),
            ("app.db-wal", "a database or its journal"),
            ("data.sqlite-journal", "a database or its journal"),
            ("shop.SQLITE3", "a database or its journal"),
            ("x-wal", "a database or its journal"),
            ("mysql-bin.000042", "a database or its journal"),
            ("dump.rdb", "a database or its journal"),
            ("core", "a dump"),
            ("core.12345", "a dump"),
            ("CORE.7", "a dump"),
            ("backup.SQL.GZ", "a dump"),
            ("java_pid1.hprof", "a dump"),
            ("error_log", "a log"),
            ("php_errors.log", "a log"),
            ("access.log.3", "a log"),
            ("access.log.2.gz", "a log"),
            ("ssl_error_log", "a log"),
            ("terraform.tfstate", "infrastructure state"),
            ("prod.tfstate.backup", "infrastructure state"),
            ("secrets.tfvars", "infrastructure state"),
            ("site.tar.gz", "an archive of the site (a backup)"),
            ("www.ZIP", "an archive of the site (a backup)"),
            ("my.cnf", "a configuration file"),
            ("index.html.Bak", "an editor's or a backup copy"),
            ("INDEX.HTML~", "an editor's or a backup copy"),
            ("page.SWP", "an editor's or a backup copy"),
            ("a.html.orig", "an editor's or a backup copy"),
        ] {
            assert_eq!(class(name), Some(want), "{name}");
        }
        for name in [
            "index.html",
            "core.css",
            "core.js",
            "corel.html",
            "logo.png",
            "blog.html",
            "catalog.html",
            "keys.html",
            "key.html",
            "v1.2.3.html",
            "style.css",
            "a.tar.html",
            "Release.gpg",
            "dbx.html",
            "swap.html",
        ] {
            assert_eq!(class(name), None, "{name}");
        }
    }

    #[test]
    fn a_webmaster_may_publish_an_extension_on_purpose() {
        assert_eq!(
            class_of("release.zip", &["zip".into()]).map(|c| c.name),
            None
        );
        assert_eq!(
            class_of("release.ZIP", &["ZIP".into()]).map(|c| c.name),
            None
        );
        // Never a key by its whole name.
        assert!(class_of("id_rsa", &["rsa".into()]).is_some());
    }
}
