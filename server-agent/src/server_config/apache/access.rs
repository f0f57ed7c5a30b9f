//! Apache's access rules read for the judge: `Require` with each of its providers, the old
//! `Allow from`, and mod_rewrite's conditions. Each is seen (the same for everyone), refuses
//! (it can only refuse a stranger such as the judge), or hides what it governs (it could let
//! the judge in where the world is refused, or the agent cannot tell).

use super::super::apache_vars::{expr_who_asks, rewrite_who_asks};
use super::super::grants::{Grant, JudgeFacts};

/// What a rule means for the places it governs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Effect {
    /// The same for everyone: left to the judge.
    Seen,
    /// Depends on who asks, but refuses the judge as it refuses a stranger (why).
    Refuses(String),
    /// Could let the judge in where others are refused, or is not understood (why): hidden.
    Hides(String),
}

/// `Require [not] PROVIDER ARGS...`.
pub(super) fn require(args: &[String], judge: &JudgeFacts) -> Effect {
    let line = format!("Require {}", args.join(" "));
    let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    let (negated, rest) = match lower.first().map(String::as_str) {
        Some("not") => (true, &lower[1..]),
        _ => (false, &lower[..]),
    };
    let Some(provider) = rest.first() else {
        return Effect::Hides(format!("{line} names no provider"));
    };
    let provider_args: Vec<&str> = args[args.len() - (rest.len() - 1)..]
        .iter()
        .map(String::as_str)
        .collect();
    let effect = match provider.as_str() {
        "all" => match provider_args.first().map(|a| a.to_ascii_lowercase()) {
            Some(a) if a == "granted" || a == "denied" => Effect::Seen,
            _ => Effect::Hides(format!("{line} is not understood")),
        },
        "ip" => match judge.apache_ip(&provider_args) {
            Ok(Grant::Judge(why)) => Effect::Hides(format!("{line} lets the judge in: {why}")),
            Ok(Grant::Everyone) => Effect::Seen,
            Ok(Grant::Others) => Effect::Refuses(format!(
                "{line} names other networks: the judge is refused there as a stranger is"
            )),
            Err(e) => Effect::Hides(format!("{line}: {e}")),
        },
        "local" => Effect::Hides(format!(
            "{line} grants loopback and this machine's own addresses, where the judge asks from"
        )),
        "host" | "forward-dns" => Effect::Hides(format!(
            "{line} grants by a name resolved from the client's address, which may be the judge's"
        )),
        "env" => Effect::Hides(format!(
            "{line} grants by a variable that may be set by who asks"
        )),
        "expr" => match expr_who_asks(&provider_args.join(" ")) {
            Some(what) => Effect::Hides(format!("{line} reads {what}, which depends on who asks")),
            None => Effect::Seen,
        },
        "valid-user" | "user" | "group" | "file-owner" | "file-group" | "dbd-group"
        | "dbm-group" | "ldap-user" | "ldap-group" | "ldap-dn" | "ldap-attribute"
        | "ldap-filter" | "ldap-search" => Effect::Refuses(format!(
            "{line} asks for credentials, which the judge has not"
        )),
        "method" => Effect::Seen,
        other => Effect::Hides(format!("{line}: provider {other} is not understood")),
    };
    match (negated, effect) {
        // A negation only takes some out of what the surrounding rules grant: the judge is
        // one of the many it leaves in, or one it refuses as it refuses them.
        (true, Effect::Hides(why)) if !why.contains("not understood") => {
            Effect::Refuses(format!("{line} only refuses those it names"))
        }
        (true, Effect::Seen) => Effect::Seen,
        (_, e) => e,
    }
}

/// `Allow from ...` (mod_access_compat).
pub(super) fn allow(args: &[String], judge: &JudgeFacts) -> Effect {
    let line = format!("Allow {}", args.join(" "));
    let Some(from) = args.first() else {
        return Effect::Hides(format!("{line} is not understood"));
    };
    if !from.eq_ignore_ascii_case("from") {
        return Effect::Hides(format!("{line} is not understood"));
    }
    let hosts: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    if hosts.is_empty() {
        return Effect::Hides(format!("{line} names nothing"));
    }
    if hosts.iter().any(|h| h.eq_ignore_ascii_case("all")) {
        return Effect::Seen;
    }
    if hosts
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("env="))
    {
        return Effect::Hides(format!(
            "{line} grants by a variable that may be set by who asks"
        ));
    }
    match judge.apache_ip(&hosts) {
        Ok(Grant::Judge(why)) => Effect::Hides(format!("{line} lets the judge in: {why}")),
        Ok(Grant::Everyone) => Effect::Seen,
        Ok(Grant::Others) => Effect::Refuses(format!(
            "{line} names other networks: the judge is refused there as a stranger is"
        )),
        // Host names are resolved from the client's address: the judge's may match.
        Err(_) => Effect::Hides(format!(
            "{line} grants by name, resolved from the client's address"
        )),
    }
}

/// What in a `RewriteCond` depends on who asks, if anything.
pub(super) fn rewrite_cond(args: &[String]) -> Option<String> {
    match args {
        [test, pattern, ..] if test.eq_ignore_ascii_case("expr") => expr_who_asks(pattern),
        [test, ..] => rewrite_who_asks(test),
        [] => Some("RewriteCond without a test".into()),
    }
}

/// What in a `RewriteRule`'s own words depends on who asks, if anything.
pub(super) fn rewrite_rule(args: &[String]) -> Option<String> {
    args.iter().find_map(|a| rewrite_who_asks(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn judge() -> JudgeFacts {
        JudgeFacts {
            source: "127.9.8.7".parse().unwrap(),
            local: vec!["192.0.2.2".parse().unwrap()],
        }
    }

    #[test]
    fn requires_that_could_let_the_judge_in_hide() {
        let j = judge();
        for r in [
            "local",
            "ip 127.0.0.1",
            "ip 10.0.0.0/8 127.0.0.1",
            "ip 192.0.2.0/24",
            "host localhost",
            "forward-dns intranet.example.org",
            "env internal",
            "expr -R '127.0.0.0/8'",
            "expr %{REMOTE_ADDR} == '127.0.0.1'",
            "ip localhost",
            "nonsense x",
            "all maybe",
        ] {
            assert!(
                matches!(require(&w(r), &j), Effect::Hides(_)),
                "{r}: {:?}",
                require(&w(r), &j)
            );
        }
        for r in [
            "ip 10.0.0.0/8",
            "valid-user",
            "user alice",
            "group staff",
            "not ip 127.0.0.1",
        ] {
            assert!(matches!(require(&w(r), &j), Effect::Refuses(_)), "{r}");
        }
        for r in [
            "all granted",
            "all denied",
            "method GET",
            "expr %{REQUEST_URI} =~ /x/",
        ] {
            assert_eq!(require(&w(r), &j), Effect::Seen, "{r}");
        }
    }

    #[test]
    fn allow_from() {
        let j = judge();
        assert_eq!(allow(&w("from all"), &j), Effect::Seen);
        assert!(matches!(allow(&w("from 127.0.0.1"), &j), Effect::Hides(_)));
        assert!(matches!(
            allow(&w("from env=let_me_in"), &j),
            Effect::Hides(_)
        ));
        assert!(matches!(
            allow(&w("from .example.org"), &j),
            Effect::Hides(_)
        ));
        assert!(matches!(allow(&w("from 10.1"), &j), Effect::Refuses(_)));
    }

    #[test]
    fn rewrite_conditions() {
        assert!(rewrite_cond(&w("%{REMOTE_ADDR} !^10\\.")).is_some());
        assert!(rewrite_cond(&["expr".into(), "-R '127.0.0.1/32'".into()]).is_some());
        assert_eq!(rewrite_cond(&w("%{REQUEST_FILENAME} !-f")), None);
        assert_eq!(
            rewrite_cond(&["expr".into(), "-f %{REQUEST_FILENAME}".into()]),
            None
        );
        assert!(rewrite_rule(&w("^(.*)$ /%{REMOTE_ADDR}/$1")).is_some());
    }
}
