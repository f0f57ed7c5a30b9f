//! Usage preferences: what a site says its content may be used for. Two vocabularies say it:
//! the IETF aipref vocabulary (draft-ietf-aipref-vocab: `search`, `ai-use`, `train-ai`, with
//! `train-genai` under `train-ai` and `bots` over all, values `y`/`n`), attached by a
//! `Content-Usage` robots.txt rule or HTTP header (draft-ietf-aipref-attach), and Cloudflare's
//! `Content-Signal` robots.txt line (`search`, `ai-input`, `ai-train`, values `yes`/`no`).
//!
//! Both map onto a crawler's three purposes. Where statements disagree the most restrictive
//! wins: a refusal anywhere that applies is a refusal.

use std::fmt::Write as _;

/// What a crawler means to do with what it fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Purpose {
    /// Building a search index that links back.
    Search,
    /// Feeding content to an AI model as it answers (aipref `ai-use`).
    AiInput,
    /// Training AI models (aipref `train-ai`).
    AiTrain,
}

impl Purpose {
    /// Every purpose.
    pub const ALL: [Purpose; 3] = [Purpose::Search, Purpose::AiInput, Purpose::AiTrain];

    /// The name on the command line and in Content-Signal.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Search => "search",
            Purpose::AiInput => "ai-input",
            Purpose::AiTrain => "ai-train",
        }
    }

    /// The aipref vocabulary's term.
    pub fn aipref(self) -> &'static str {
        match self {
            Purpose::Search => "search",
            Purpose::AiInput => "ai-use",
            Purpose::AiTrain => "train-ai",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl std::str::FromStr for Purpose {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "search" => Ok(Purpose::Search),
            "ai-input" | "ai-use" => Ok(Purpose::AiInput),
            "ai-train" | "train-ai" => Ok(Purpose::AiTrain),
            other => Err(format!(
                "unknown purpose {other:?} (search, ai-input or ai-train)"
            )),
        }
    }
}

/// Preferences: for each purpose, allowed, refused or not stated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Prefs([Option<bool>; 3]);

impl Prefs {
    /// Nothing stated.
    pub const NONE: Prefs = Prefs([None; 3]);

    /// Every purpose refused: what a statement that cannot be read may mean.
    pub const REFUSE_ALL: Prefs = Prefs([Some(false); 3]);

    /// What is stated for `purpose`.
    pub fn get(&self, purpose: Purpose) -> Option<bool> {
        self.0[purpose.index()]
    }

    /// States `allowed` for `purpose`.
    pub fn set(&mut self, purpose: Purpose, allowed: bool) {
        self.0[purpose.index()] = Some(allowed);
    }

    /// Whether nothing is stated.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// Whether `purpose` is not refused.
    pub fn allows(&self, purpose: Purpose) -> bool {
        self.get(purpose) != Some(false)
    }

    /// The first of `purposes` these preferences refuse.
    pub fn refuses(&self, purposes: &[Purpose]) -> Option<Purpose> {
        purposes.iter().copied().find(|p| !self.allows(*p))
    }

    /// Both statements together, the most restrictive winning: a refusal in either is one.
    pub fn strictest(self, other: Prefs) -> Prefs {
        let mut out = Prefs::NONE;
        for p in Purpose::ALL {
            out.0[p.index()] = match (self.get(p), other.get(p)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), _) | (_, Some(true)) => Some(true),
                _ => None,
            };
        }
        out
    }

    /// The aipref form (`search=y, ai-use=n`), as a `Content-Usage` header writes it.
    pub fn to_aipref(&self) -> String {
        let mut s = String::new();
        for p in Purpose::ALL {
            if let Some(v) = self.get(p) {
                if !s.is_empty() {
                    s.push_str(", ");
                }
                let _ = write!(s, "{}={}", p.aipref(), if v { "y" } else { "n" });
            }
        }
        s
    }

    /// Reads an aipref statement (`train-ai=n, search=y`). Unknown terms are reported in
    /// `unknown`, not guessed at; a malformed statement is an error.
    pub fn parse_aipref(text: &str, unknown: &mut Vec<String>) -> Result<Prefs, String> {
        parse_pairs(text, Vocabulary::Aipref, unknown)
    }

    /// Reads a Content-Signal statement (`search=yes, ai-train=no`).
    pub fn parse_content_signal(text: &str, unknown: &mut Vec<String>) -> Result<Prefs, String> {
        parse_pairs(text, Vocabulary::ContentSignal, unknown)
    }
}

#[derive(Clone, Copy)]
enum Vocabulary {
    Aipref,
    ContentSignal,
}

fn parse_pairs(text: &str, vocab: Vocabulary, unknown: &mut Vec<String>) -> Result<Prefs, String> {
    let mut prefs = Prefs::NONE;
    // A parent term (`bots`) applies where no child is stated; a child (`train-genai`) refuses
    // its parent's purpose when it refuses.
    let mut all: Option<bool> = None;
    let text = text.trim();
    if text.is_empty() {
        return Err("an empty statement".into());
    }
    for pair in text.split(',') {
        let pair = pair.trim();
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not term=value"))?;
        let key = key.trim().to_ascii_lowercase();
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!("{pair:?}: {key:?} is not a term"));
        }
        // Parameters after `;` (structured-field syntax) qualify a value; none are defined.
        let value = value
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let allowed = match (vocab, value.as_str()) {
            (Vocabulary::Aipref, "y") | (Vocabulary::ContentSignal, "yes") => true,
            (Vocabulary::Aipref, "n") | (Vocabulary::ContentSignal, "no") => false,
            _ => return Err(format!("{key}={value}: the value is not understood")),
        };
        let purpose = match (vocab, key.as_str()) {
            (_, "search") => Some(Purpose::Search),
            (Vocabulary::Aipref, "ai-use") | (Vocabulary::ContentSignal, "ai-input") => {
                Some(Purpose::AiInput)
            }
            (Vocabulary::Aipref, "train-ai") | (Vocabulary::ContentSignal, "ai-train") => {
                Some(Purpose::AiTrain)
            }
            (Vocabulary::Aipref, "train-genai") => {
                if !allowed {
                    prefs.set(Purpose::AiTrain, false);
                }
                None
            }
            (Vocabulary::Aipref, "bots") => {
                all = Some(allowed);
                None
            }
            _ => {
                if unknown.len() < 16 {
                    unknown.push(key.clone());
                }
                None
            }
        };
        if let Some(p) = purpose {
            let v = prefs.get(p).map_or(allowed, |prev| prev && allowed);
            prefs.set(p, v);
        }
    }
    if let Some(a) = all {
        for p in Purpose::ALL {
            if prefs.get(p).is_none() {
                prefs.set(p, a);
            }
        }
    }
    Ok(prefs)
}

/// One path's statement in robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    path: String,
    prefs: Prefs,
}

#[derive(Debug, Clone, Default)]
struct Group {
    agents: Vec<String>,
    rules: Vec<Rule>,
}

/// The usage statements of one robots.txt, by group.
#[derive(Debug, Clone, Default)]
pub struct RobotsUsage {
    groups: Vec<Group>,
    /// Statements outside any group, which apply to every crawler.
    global: Vec<Rule>,
    /// What could not be read, one line each, at most [`MAX_PROBLEMS`].
    pub problems: Vec<String>,
}

/// The most problems kept per robots.txt (the rest are counted, not stored).
pub const MAX_PROBLEMS: usize = 8;

impl RobotsUsage {
    /// Reads the `Content-Usage` and `Content-Signal` lines of a robots.txt, in the groups
    /// RFC 9309 forms. Other lines are the robots.txt parser's business and are skipped here.
    pub fn parse(body: &str) -> RobotsUsage {
        let mut out = RobotsUsage::default();
        let mut current: Option<Group> = None;
        let mut last_was_agent = false;
        for (n, raw) in body.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            let Some((field, value)) = line.split_once(':') else {
                continue;
            };
            let field = field.trim().to_ascii_lowercase();
            let value = value.trim();
            if field == "user-agent" {
                if !last_was_agent && let Some(g) = current.take() {
                    out.groups.push(g);
                }
                current
                    .get_or_insert_with(Group::default)
                    .agents
                    .push(value.to_ascii_lowercase());
                last_was_agent = true;
                continue;
            }
            last_was_agent = false;
            let vocab = match field.as_str() {
                "content-usage" => Vocabulary::Aipref,
                "content-signal" => Vocabulary::ContentSignal,
                _ => continue,
            };
            let (path, statement) = match value.strip_prefix('/') {
                Some(_) => {
                    let (p, rest) = value.split_once(char::is_whitespace).unwrap_or((value, ""));
                    (p.to_string(), rest.trim())
                }
                None => ("/".to_string(), value),
            };
            let mut unknown = Vec::new();
            match parse_pairs(statement, vocab, &mut unknown) {
                Ok(prefs) => {
                    let rule = Rule { path, prefs };
                    match current.as_mut() {
                        Some(g) => g.rules.push(rule),
                        None => out.global.push(rule),
                    }
                }
                Err(e) => out.problem(format!("line {}: {field}: {e}", n + 1)),
            }
            for term in unknown {
                out.problem(format!("line {}: {field}: unknown term {term:?}", n + 1));
            }
        }
        if let Some(g) = current {
            out.groups.push(g);
        }
        out
    }

    fn problem(&mut self, p: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p);
        }
    }

    /// Whether the file states anything at all.
    pub fn is_empty(&self) -> bool {
        self.global.is_empty() && self.groups.iter().all(|g| g.rules.is_empty())
    }

    /// The preferences for `path` (with its query) that apply to the crawler named
    /// `product_token`: its own groups (else `*`'s) and the statements outside any group;
    /// among them the rule whose path matches as RFC 9309 matches (`*` any characters, a final
    /// `$` the end) with the most characters, the most restrictive where several are as long.
    pub fn at(&self, product_token: &str, path: &str) -> Prefs {
        let token = product_token.to_ascii_lowercase();
        let mine: Vec<&Group> = self
            .groups
            .iter()
            .filter(|g| g.agents.contains(&token))
            .collect();
        let groups = if mine.is_empty() {
            self.groups
                .iter()
                .filter(|g| g.agents.iter().any(|a| a == "*"))
                .collect()
        } else {
            mine
        };
        let rules = groups
            .iter()
            .flat_map(|g| g.rules.iter())
            .chain(self.global.iter());
        let mut best: Option<(usize, Prefs)> = None;
        for rule in rules.filter(|r| path_matches(&r.path, path)) {
            let len = rule.path.len();
            best = match best {
                Some((l, p)) if l > len => Some((l, p)),
                Some((l, p)) if l == len => Some((l, p.strictest(rule.prefs))),
                _ => Some((len, rule.prefs)),
            };
        }
        best.map(|(_, p)| p).unwrap_or_default()
    }
}

/// Whether a robots.txt path pattern matches `path` as RFC 9309 has it (section 2.2.3): from
/// the path's start, `*` for any run of characters, a `$` at the pattern's end for the end of
/// the path.
pub fn path_matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = path.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    if parts.is_empty() {
        return !anchored || rest.is_empty();
    }
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        if last && anchored {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_match_as_rfc_9309_has_it() {
        for (pattern, path, m) in [
            ("/", "/anything", true),
            ("/fish", "/fish.html", true),
            ("/fish", "/Fish.html", false),
            ("/fish$", "/fish", true),
            ("/fish$", "/fish.html", false),
            ("/*.php", "/index.php", true),
            ("/*.php", "/folder/filename.php?parameters", true),
            ("/*.php$", "/filename.php", true),
            ("/*.php$", "/filename.php?parameters", false),
            ("/*.php$", "/filename.php5", false),
            ("/fish*.php", "/fish.php", true),
            ("/fish*.php", "/fishheads/catfish.php?parameters", true),
            ("/fish*.php", "/Fish.PHP", false),
            ("/*/private/", "/a/private/x", true),
            ("/*/private/", "/private/x", false),
            ("*", "/x", true),
        ] {
            assert_eq!(path_matches(pattern, path), m, "{pattern} {path}");
        }
    }

    #[test]
    fn usage_rules_match_with_wildcards_and_the_longest_pattern_wins() {
        let u = RobotsUsage::parse(
            "User-agent: *\nContent-Usage: /docs/*.pdf$ train-ai=n\nContent-Usage: /docs/ train-ai=y\n\
             Content-Usage: /*/drafts/ search=n\n",
        );
        assert_eq!(
            u.at("bot", "/docs/a.pdf").get(Purpose::AiTrain),
            Some(false)
        );
        assert_eq!(
            u.at("bot", "/docs/a.pdf?x=1").get(Purpose::AiTrain),
            Some(true)
        );
        assert_eq!(
            u.at("bot", "/docs/a.html").get(Purpose::AiTrain),
            Some(true)
        );
        assert_eq!(
            u.at("bot", "/blog/drafts/x").get(Purpose::Search),
            Some(false)
        );
        assert_eq!(u.at("bot", "/drafts/x"), Prefs::NONE);
    }

    fn prefs(s: &str) -> Prefs {
        Prefs::parse_aipref(s, &mut Vec::new()).unwrap()
    }

    #[test]
    fn both_vocabularies_map_onto_the_three_purposes() {
        let mut unknown = Vec::new();
        let a = Prefs::parse_aipref("train-ai=n, search=y, ai-use=N, foo=y", &mut unknown).unwrap();
        assert_eq!(a.get(Purpose::AiTrain), Some(false));
        assert_eq!(a.get(Purpose::Search), Some(true));
        assert_eq!(a.get(Purpose::AiInput), Some(false));
        assert_eq!(unknown, ["foo"]);
        assert_eq!(a.to_aipref(), "search=y, ai-use=n, train-ai=n");
        let c = Prefs::parse_content_signal("search=yes, ai-input=yes, ai-train=no", &mut unknown)
            .unwrap();
        assert_eq!(c, prefs("search=y, ai-use=y, train-ai=n"));
        // A parent term fills what is not stated; a refused child refuses its parent's purpose.
        assert_eq!(
            prefs("bots=n, search=y"),
            prefs("search=y, ai-use=n, train-ai=n")
        );
        assert_eq!(prefs("train-genai=n"), prefs("train-ai=n"));
        // Each vocabulary's values only; junk is an error, not a guess.
        for bad in ["", "search", "search=yes", "train-ai=maybe", "=n"] {
            assert!(Prefs::parse_aipref(bad, &mut unknown).is_err(), "{bad}");
        }
        assert!(Prefs::parse_content_signal("search=y", &mut unknown).is_err());
        assert_eq!(
            prefs("search=y").strictest(prefs("search=n, train-ai=y")),
            prefs("search=n, train-ai=y")
        );
        assert!(prefs("search=n").allows(Purpose::AiTrain));
        assert_eq!(
            prefs("search=n").refuses(&[Purpose::AiTrain, Purpose::Search]),
            Some(Purpose::Search)
        );
    }

    #[test]
    fn robots_txt_groups_paths_and_conflicts() {
        let txt = "\
Content-Signal: ai-train=no
User-agent: *
Disallow: /private/
Content-Usage: train-ai=y, search=y
Content-Usage: /blog/ ai-use=n
Content-Signal: /blog/ ai-input=yes
Content-Usage: /blog/drafts/ search=n

User-agent: webcoop-crawl
User-agent: otherbot
Content-Usage: /news/ search=n
Content-Weird: x=y
Content-Usage: /bad/ what=ever=1, search
Content-Signal: search=maybe
";
        let r = RobotsUsage::parse(txt);
        // `*`: the global line refuses training everywhere, most restrictive with the group's.
        let root = r.at("anybot", "/index.html");
        assert_eq!(root.get(Purpose::AiTrain), Some(false));
        assert_eq!(root.get(Purpose::Search), Some(true));
        // Longest path wins; two statements as long disagree, and the refusal holds.
        let blog = r.at("anybot", "/blog/post");
        assert_eq!(blog.get(Purpose::AiInput), Some(false));
        assert_eq!(
            blog.get(Purpose::Search),
            None,
            "the longest rule says nothing of search"
        );
        assert_eq!(
            r.at("anybot", "/blog/drafts/x").get(Purpose::Search),
            Some(false)
        );
        // Our own group replaces `*`'s.
        assert_eq!(
            r.at("WebCoop-Crawl", "/news/a").get(Purpose::Search),
            Some(false)
        );
        assert_eq!(
            r.at("webcoop-crawl", "/blog/post").get(Purpose::AiInput),
            None
        );
        assert_eq!(
            r.at("webcoop-crawl", "/x").get(Purpose::AiTrain),
            Some(false)
        );
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(r.problems[0].contains("line 13"), "{:?}", r.problems);
        assert!(!r.is_empty());
        assert!(RobotsUsage::parse("User-agent: *\nDisallow: /\n").is_empty());
    }

    #[test]
    fn junk_is_bounded_and_never_panics() {
        let mut txt = String::from("User-agent: *\n");
        for i in 0..1000 {
            txt.push_str(&format!(
                "Content-Usage: /{i} nonsense{i}=y\nContent-Signal: \u{1F600}\n"
            ));
        }
        let r = RobotsUsage::parse(&txt);
        assert_eq!(r.problems.len(), MAX_PROBLEMS);
        for junk in [
            ":",
            "Content-Usage:",
            "Content-Usage: /",
            "content-usage:/a",
            "\0:\0",
        ] {
            let _ = RobotsUsage::parse(junk).at("x", "/");
        }
    }
}
