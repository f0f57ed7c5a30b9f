//! The configuration's own variables (`set`, `map`, `geo`, `split_clients`, named captures)
//! traced to what they read: a variable whose value may differ between clients (the client's
//! address, headers, cookies) taints every variable defined from it.

use super::super::directives;
use super::{Directive, all};
use std::collections::{HashMap, HashSet};

/// What the configuration's own variables (`set`, `map`, `geo`, `split_clients`, named
/// captures) are: those whose value may depend on who asks, and every one it defines.
pub(super) struct Variables {
    who_asks: HashSet<String>,
    defined: HashSet<String>,
}

impl Variables {
    /// Whether reading `v` may give another value to another client.
    pub(super) fn depends(&self, v: &str) -> bool {
        self.who_asks.contains(v)
            || (!self.defined.contains(v) && !directives::nginx_variable_same_for_all(v))
    }
}

pub(super) fn variables(tree: &[Directive]) -> Variables {
    // Each defined variable, with the variables its definitions read (None: always depends).
    let mut defs: HashMap<String, Option<HashSet<String>>> = HashMap::new();
    let mut reads = |var: &str, from: Option<HashSet<String>>| {
        let entry = defs.entry(var.trim_start_matches('$').to_ascii_lowercase());
        match (entry, from) {
            (std::collections::hash_map::Entry::Occupied(mut o), Some(f)) => {
                if let Some(s) = o.get_mut() {
                    s.extend(f);
                }
            }
            (std::collections::hash_map::Entry::Occupied(mut o), None) => {
                o.insert(None);
            }
            (std::collections::hash_map::Entry::Vacant(v), f) => {
                v.insert(f);
            }
        }
    };
    for d in all(tree) {
        let words = |ws: &[String]| -> HashSet<String> {
            ws.iter().flat_map(|w| variables_in(w)).collect()
        };
        match (d.name.as_str(), d.args.as_slice()) {
            ("set", [var, value, ..]) => {
                reads(var, Some(variables_in(value).into_iter().collect()))
            }
            ("map", [source, var, ..]) => {
                let mut from: HashSet<String> = variables_in(source).into_iter().collect();
                for entry in d.block.iter().flatten() {
                    from.extend(words(&entry.args));
                    from.extend(variables_in(&entry.name));
                }
                reads(var, Some(from));
            }
            ("split_clients", [source, var, ..]) => {
                reads(var, Some(variables_in(source).into_iter().collect()))
            }
            // The client's address, always (whatever source it is given).
            ("geo", args) | ("geoip2", args) => {
                if let Some(var) = args.last() {
                    reads(var, None);
                }
            }
            ("auth_request_set", [var, ..]) | ("secure_link", [var, ..]) => reads(var, None),
            _ => {}
        }
    }
    // Named captures of regular expressions read the URI: the same for everyone.
    let named: HashSet<String> = all(tree)
        .iter()
        .filter(|d| d.name == "location" || d.name == "if" || d.name == "rewrite")
        .flat_map(|d| d.args.iter().flat_map(|a| named_captures(a)))
        .collect();
    let mut who: HashSet<String> = HashSet::new();
    loop {
        let before = who.len();
        for (var, from) in &defs {
            let depends = match from {
                None => true,
                Some(f) => f.iter().any(|v| variable_depends(v, &defs, &who, &named)),
            };
            if depends {
                who.insert(var.clone());
            }
        }
        if who.len() == before {
            let mut defined: HashSet<String> = defs.into_keys().collect();
            defined.extend(named);
            return Variables {
                who_asks: who,
                defined,
            };
        }
    }
}

/// Whether a variable read depends on who asks, given what is known of the defined ones.
fn variable_depends(
    v: &str,
    defs: &HashMap<String, Option<HashSet<String>>>,
    who: &HashSet<String>,
    named: &HashSet<String>,
) -> bool {
    if who.contains(v) {
        return true;
    }
    if defs.contains_key(v) || named.contains(v) {
        return false;
    }
    !directives::nginx_variable_same_for_all(v)
}

/// The variables a word reads (`$remote_addr`, `${host}`), lower case, without `$`.
pub(super) fn variables_in(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = word.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' {
            let braced = bytes.get(i + 1) == Some(&b'{');
            let start = i + 1 + usize::from(braced);
            let mut end = start;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            if end > start {
                out.push(word[start..end].to_ascii_lowercase());
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// The names of `(?<name>...)` and `(?P<name>...)` groups in a regular expression.
fn named_captures(re: &str) -> Vec<String> {
    let mut out = Vec::new();
    for marker in ["(?<", "(?P<"] {
        let mut rest = re;
        while let Some(i) = rest.find(marker) {
            let after = &rest[i + marker.len()..];
            if let Some(end) = after.find('>') {
                out.push(after[..end].to_ascii_lowercase());
            }
            rest = after;
        }
    }
    out
}
