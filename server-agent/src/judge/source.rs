//! The address the judge asks from. Every server trusts 127.0.0.1, the machine itself, most:
//! a rule that grants it (`allow 127.0.0.1`, a PHP gate on `REMOTE_ADDR`) would let the judge
//! in where the world is refused. On Linux every address of 127.0.0.0/8 is the machine's own
//! without any set-up, so each installation picks one of its own, at random, that no
//! configuration names, and keeps it in its state directory.

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

/// The file in the state directory that keeps the installation's address.
const FILE: &str = "judge-source";

/// Why an address cannot be the judge's.
fn unusable(a: IpAddr) -> Option<&'static str> {
    match a {
        IpAddr::V4(v4) if v4 == Ipv4Addr::LOCALHOST => {
            Some("127.0.0.1 is the address every server trusts most")
        }
        IpAddr::V4(v4) if v4.octets()[0] == 127 && v4.octets()[1] == 0 => {
            Some("127.0.x.y holds the addresses systems name (127.0.0.1, Debian's 127.0.1.1)")
        }
        IpAddr::V4(v4) if v4.octets()[3] == 0 || v4.octets()[3] == 255 => {
            Some("a network's first or last address")
        }
        a if a.is_unspecified() || a.is_multicast() => Some("not an address of this machine"),
        _ => None,
    }
}

/// A fresh address in 127.1.0.1 - 127.254.255.254.
fn pick() -> IpAddr {
    let b: [u8; 3] = rand::random();
    IpAddr::V4(Ipv4Addr::new(127, 1 + b[0] % 254, b[1], 1 + b[2] % 254))
}

/// Whether this machine lets a socket be bound to `a`.
fn bindable(a: IpAddr) -> Result<(), String> {
    std::net::TcpListener::bind((a, 0))
        .map(drop)
        .map_err(|e| format!("cannot ask from {a}: {e}"))
}

/// The installation's judge address: `given` (`--judge-source`), else the one kept in
/// `state`, else a new one kept there. Each is checked to be bindable here.
pub(crate) fn of_installation(state: &Path, given: Option<IpAddr>) -> Result<IpAddr, String> {
    if let Some(a) = given {
        if let Some(why) = unusable(a) {
            return Err(format!("--judge-source {a}: {why}"));
        }
        bindable(a)?;
        return Ok(a);
    }
    let path = state.join(FILE);
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(a) = text.trim().parse::<IpAddr>()
        && unusable(a).is_none()
        && bindable(a).is_ok()
    {
        return Ok(a);
    }
    let a = pick();
    bindable(a).map_err(|e| {
        format!("{e}: this system does not treat all of 127.0.0.0/8 as its own; give --judge-source with an address of this machine that no web server rule names")
    })?;
    let tmp = state.join(format!("{FILE}.tmp"));
    std::fs::write(&tmp, format!("{a}\n"))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installation_keeps_one_address_that_no_rule_names() {
        let tmp = tempfile::tempdir().unwrap();
        let a = of_installation(tmp.path(), None).unwrap();
        assert!(unusable(a).is_none(), "{a}");
        let IpAddr::V4(v4) = a else { panic!("{a}") };
        assert_eq!(v4.octets()[0], 127);
        assert_ne!(v4.octets()[1], 0);
        assert_eq!(of_installation(tmp.path(), None).unwrap(), a, "kept");
        // A kept address that became unusable is replaced.
        std::fs::write(tmp.path().join(FILE), "127.0.0.1\n").unwrap();
        assert_ne!(
            of_installation(tmp.path(), None).unwrap(),
            "127.0.0.1".parse::<IpAddr>().unwrap()
        );
        let e = of_installation(tmp.path(), Some("127.0.0.1".parse().unwrap())).unwrap_err();
        assert!(e.contains("--judge-source"), "{e}");
        let given = "127.9.9.9".parse().unwrap();
        assert_eq!(of_installation(tmp.path(), Some(given)).unwrap(), given);
    }
}
