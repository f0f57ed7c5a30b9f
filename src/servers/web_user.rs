//! The user Debian's web servers run as, and making a test's directories reachable by it:
//! the tests run as root, and a server that reads as root would serve what production's
//! `www-data` cannot.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The user Debian runs nginx's workers, Apache's children and PHP-FPM's pool as.
pub const WEB_USER: &str = "www-data";

/// Whether the tests run as root (only root can start a server that drops to the web user).
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Lets the web user enter `dir` and read what is in it (every directory above it enterable,
/// as a temporary directory under /tmp is not); `writable` lets it write there too.
pub fn open_to_web_user(dir: &Path, writable: bool) {
    let mode = if writable { 0o777 } else { 0o755 };
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
    for up in dir.ancestors().skip(1) {
        if let Ok(m) = std::fs::metadata(up) {
            let bits = m.permissions().mode();
            if bits & 0o001 == 0 {
                let _ = std::fs::set_permissions(up, std::fs::Permissions::from_mode(bits | 0o011));
            }
        }
    }
}
