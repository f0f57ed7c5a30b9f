//! What the tests of the configuration readers share: a site, a judge asking from
//! `127.83.14.201` on a machine whose own address is `192.0.2.2`, and assertions on what is
//! hidden.

use super::{JudgeFacts, ServerRules, Site};
use std::path::{Path, PathBuf};

/// A site at `/` of `www.example.org` in a docroot, trusting nothing.
pub(crate) struct TestSite {
    docroot: PathBuf,
    spellings: Vec<String>,
    judge: JudgeFacts,
}

impl TestSite {
    /// The site in `docroot`, also spelt as each of `more`.
    pub(crate) fn new(docroot: &Path, more: &[&str]) -> TestSite {
        let mut spellings = vec![docroot.display().to_string()];
        spellings.extend(more.iter().map(|s| s.to_string()));
        TestSite {
            docroot: docroot.to_path_buf(),
            spellings,
            judge: JudgeFacts {
                source: "127.83.14.201".parse().unwrap(),
                local: vec!["127.0.0.1".parse().unwrap(), "192.0.2.2".parse().unwrap()],
            },
        }
    }

    /// The site as the readers take it.
    pub(crate) fn site(&self) -> Site<'_> {
        Site {
            docroot: &self.docroot,
            spellings: &self.spellings,
            base_path: "/",
            host: "www.example.org",
            trusted: &[],
            judge: &self.judge,
            vhosts: None,
            defines: &[],
        }
    }

    /// No rules yet.
    pub(crate) fn rules(&self) -> ServerRules {
        ServerRules::for_site(self.site())
    }
}

/// Fails unless each of `hidden` is hidden and none of `shown` is.
pub(crate) fn assert_hides(rules: &ServerRules, hidden: &[&str], shown: &[&str]) {
    for p in hidden {
        assert!(
            rules.hides(p).is_some(),
            "{p} is not hidden; hidden: {:?}",
            rules
                .hidden()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        );
    }
    for p in shown {
        assert!(
            rules.hides(p).is_none(),
            "{p}: {:?}",
            rules.hides(p).map(ToString::to_string)
        );
    }
}

/// Fails unless the rules hide nothing at all.
pub(crate) fn assert_hides_nothing(rules: &ServerRules) {
    assert!(
        rules.hidden().is_empty(),
        "{:?}",
        rules
            .hidden()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    );
}
