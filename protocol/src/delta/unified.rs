//! Unified diffs for text clients: made with `similar`, applied with `diffy`, and accepted by
//! GNU patch.

use super::{DeltaError, check_size};
use similar::TextDiff;

/// A unified diff from `base` to `new` (both UTF-8 text), with `---`/`+++` headers naming
/// `old_name` and `new_name`. Identical inputs give an empty diff. A last line without a newline
/// is marked `\ No newline at end of file`, as GNU diff does.
pub fn diff(base: &[u8], new: &[u8], old_name: &str, new_name: &str) -> Result<String, DeltaError> {
    check_size(base)?;
    check_size(new)?;
    let base = std::str::from_utf8(base).map_err(|_| DeltaError::NotText("held"))?;
    let new = std::str::from_utf8(new).map_err(|_| DeltaError::NotText("new"))?;
    if base == new {
        return Ok(String::new());
    }
    let diff = TextDiff::from_lines(base, new);
    let mut unified = diff.unified_diff();
    unified
        .context_radius(3)
        .header(old_name, new_name)
        .missing_newline_hint(true);
    Ok(unified.to_string())
}

/// Applies a unified diff made by [`diff`] (or GNU diff) to `base`. Hunks must apply exactly.
pub fn apply(base: &[u8], patch: &str) -> Result<Vec<u8>, DeltaError> {
    if patch.is_empty() {
        return Ok(base.to_vec());
    }
    let base = std::str::from_utf8(base).map_err(|_| DeltaError::NotText("held"))?;
    let parsed =
        diffy::Patch::from_str(patch).map_err(|e| DeltaError::PatchFailed(e.to_string()))?;
    if parsed.hunks().is_empty() {
        return Err(DeltaError::PatchFailed("no hunk in the patch".into()));
    }
    diffy::apply(base, &parsed)
        .map(String::into_bytes)
        .map_err(|e| DeltaError::PatchFailed(e.to_string()))
}

/// Applies a patch and checks the result against the validator the server announced.
pub fn apply_verified(
    base: &[u8],
    patch: &str,
    expected: &crate::validator::EntityTag,
) -> Result<Vec<u8>, DeltaError> {
    super::dcz::verify_against(expected, apply(base, patch)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_and_apply_round_trip_including_missing_final_newline() {
        let cases: [(&str, &str); 5] = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc", "a\nb\nc\nd"),
            ("", "new file\n"),
            ("gone\n", ""),
            ("x\r\ny\r\n", "x\r\nz\r\n"),
        ];
        for (old, new) in cases {
            let d = diff(old.as_bytes(), new.as_bytes(), "a/f", "b/f").unwrap();
            assert_eq!(
                apply(old.as_bytes(), &d).unwrap(),
                new.as_bytes(),
                "{old:?} -> {new:?}\n{d}"
            );
        }
        assert_eq!(diff(b"same", b"same", "a", "b").unwrap(), "");
        assert_eq!(apply(b"same", "").unwrap(), b"same");
    }

    #[test]
    fn binary_is_refused_and_a_wrong_base_fails() {
        assert_eq!(
            diff(&[0xff, 0xfe], b"x", "a", "b"),
            Err(DeltaError::NotText("held"))
        );
        let d = diff(b"one\ntwo\n", b"one\nthree\n", "a", "b").unwrap();
        assert!(matches!(
            apply(b"uno\ndos\n", &d),
            Err(DeltaError::PatchFailed(_))
        ));
        assert!(matches!(
            apply(b"one\n", "this is not a patch"),
            Err(DeltaError::PatchFailed(_))
        ));
    }
}
