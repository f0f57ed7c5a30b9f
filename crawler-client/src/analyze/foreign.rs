//! SVG and MathML inside an HTML page (the HTML standard's "foreign content"), followed the way
//! the tree builder follows it, for the scan in `html_tags`: which namespace a tag is in, where
//! HTML holds again (integration points), which tags leave foreign content, and how an end tag
//! closes what is open. The scan keeps no stack of the page's HTML elements, so where the
//! standard's answer depends on one (an end tag inside SVG naming an element open outside it,
//! an integration point closed with HTML elements open inside, an `<a>` whose reading depends
//! on the formatting elements open), the model says it cannot tell ([`Unsure`]) and the page
//! is read by a tree builder instead.

use std::ops::Range;

/// The namespace of an element: HTML, or the foreign content of SVG or MathML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Namespace {
    Html,
    Svg,
    MathMl,
}

/// Longest element name the model keeps; a longer one inside foreign content makes it unsure.
const NAME_MAX: usize = 16;

/// The scan met markup whose reading needs the whole tree: read the page with a tree builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unsure;

/// An element name, lower case, kept inline.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Name {
    bytes: [u8; NAME_MAX],
    len: u8,
}

impl Name {
    fn new(name: &[u8]) -> Result<Self, Unsure> {
        if name.is_empty() || name.len() > NAME_MAX {
            return Err(Unsure);
        }
        let mut bytes = [0u8; NAME_MAX];
        bytes[..name.len()].copy_from_slice(name);
        Ok(Name {
            bytes,
            len: name.len() as u8,
        })
    }

    fn get(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// An element open on the model's stack.
#[derive(Clone, Copy, PartialEq)]
enum Open {
    /// An SVG or MathML element holding foreign content.
    Foreign(Namespace, Name),
    /// An SVG or MathML element holding HTML (an HTML or MathML text integration point): the
    /// index of its name in [`INTEGRATION_POINTS`].
    Integration(usize),
    /// An HTML element open inside an integration point.
    Html(Name),
}

/// The HTML integration points and MathML text integration points (the standard's tree
/// construction, "HTML integration point"), by the namespace they are in.
const INTEGRATION_POINTS: [(&[u8], Namespace); 9] = [
    (b"foreignobject", Namespace::Svg),
    (b"desc", Namespace::Svg),
    (b"title", Namespace::Svg),
    (b"mi", Namespace::MathMl),
    (b"mo", Namespace::MathMl),
    (b"mn", Namespace::MathMl),
    (b"ms", Namespace::MathMl),
    (b"mtext", Namespace::MathMl),
    (b"annotation-xml", Namespace::MathMl),
];

/// Deepest nesting followed: past it the page is read by a tree builder.
const DEPTH_MAX: usize = 256;

/// What is open from the first `<svg>` or `<math>` on; empty in plain HTML.
#[derive(Default)]
pub(crate) struct Contexts {
    open: Vec<Open>,
}

/// How a start tag reads in its context.
pub(crate) struct StartTag {
    /// The namespace its element is in.
    pub(crate) namespace: Namespace,
    /// Read by the HTML rules (raw text elements hold raw text; `template` is one).
    pub(crate) html: bool,
}

impl Contexts {
    /// Nothing foreign is open: the page is plain HTML here.
    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The tokenizer reads CDATA sections where the current element is not HTML.
    pub(crate) fn cdata_allowed(&self) -> bool {
        matches!(
            self.open.last(),
            Some(Open::Foreign(..) | Open::Integration(_))
        )
    }

    fn push(&mut self, o: Open) -> Result<(), Unsure> {
        if self.open.len() >= DEPTH_MAX {
            return Err(Unsure);
        }
        self.open.push(o);
        Ok(())
    }

    /// Whether the current element's rules for a start tag `name` are foreign content's.
    fn foreign_rules(&self, name: &[u8]) -> Option<Namespace> {
        match self.open.last()? {
            Open::Foreign(ns, _) => Some(*ns),
            // A MathML text integration point keeps these two in MathML.
            Open::Integration(i)
                if matches!(
                    INTEGRATION_POINTS[*i].0,
                    b"mi" | b"mo" | b"mn" | b"ms" | b"mtext"
                ) && matches!(name, b"mglyph" | b"malignmark") =>
            {
                Some(Namespace::MathMl)
            }
            _ => None,
        }
    }

    /// A start tag `name` (lower case; empty when too long) with its attributes.
    pub(crate) fn start_tag(
        &mut self,
        html: &[u8],
        name: &[u8],
        attrs: &[(Range<usize>, Range<usize>)],
        self_closing: bool,
    ) -> Result<StartTag, Unsure> {
        if let Some(ns) = self.foreign_rules(name) {
            let breaks_out = leaves_foreign_content(name)
                || (name == b"font" && font_leaves_foreign_content(html, attrs));
            if !breaks_out {
                let annotation = matches!(self.open.last(),
                    Some(Open::Foreign(_, n)) if n.get() == b"annotation-xml");
                let ns = if annotation && name == b"svg" {
                    Namespace::Svg
                } else {
                    ns
                };
                if !self_closing {
                    let open = match integration_point(ns, name, html, attrs) {
                        Some(i) => Open::Integration(i),
                        None => Open::Foreign(ns, Name::new(name)?),
                    };
                    self.push(open)?;
                }
                return Ok(StartTag {
                    namespace: ns,
                    html: false,
                });
            }
            // Back to the nearest HTML context, where the tag is read again.
            while matches!(self.open.last(), Some(Open::Foreign(..))) {
                self.open.pop();
            }
        }
        self.html_start_tag(name, self_closing)
    }

    /// A start tag read by the HTML rules.
    fn html_start_tag(&mut self, name: &[u8], self_closing: bool) -> Result<StartTag, Unsure> {
        let root = match name {
            b"svg" => Some(Namespace::Svg),
            b"math" => Some(Namespace::MathMl),
            _ => None,
        };
        if let Some(ns) = root {
            if !self_closing {
                self.push(Open::Foreign(ns, Name::new(name)?))?;
            }
            return Ok(StartTag {
                namespace: ns,
                html: false,
            });
        }
        if !self.open.is_empty() {
            // Framesets replace the body; `a` and `nobr` restructure by the formatting
            // elements open outside: a tree tells.
            if matches!(name, b"a" | b"nobr" | b"frameset" | b"frame") {
                return Err(Unsure);
            }
            if !void(name) {
                self.push(Open::Html(Name::new(name)?))?;
            }
        }
        Ok(StartTag {
            namespace: Namespace::Html,
            html: true,
        })
    }

    /// An end tag `name` (lower case; empty when too long): whether the HTML rules read it.
    pub(crate) fn end_tag(&mut self, name: &[u8]) -> Result<bool, Unsure> {
        match self.open.last() {
            None => Ok(true),
            Some(Open::Html(n)) => {
                if n.get() == name && !name.is_empty() {
                    self.open.pop();
                    Ok(true)
                } else {
                    Err(Unsure)
                }
            }
            Some(_) if matches!(name, b"p" | b"br") => {
                while matches!(self.open.last(), Some(Open::Foreign(..))) {
                    self.open.pop();
                }
                // Read again by the HTML rules: inside an integration point it closes (or
                // makes) a `p` the model does not follow.
                match self.open.last() {
                    None | Some(Open::Integration(_)) => Ok(false),
                    Some(_) => Err(Unsure),
                }
            }
            Some(_) => {
                // The standard walks down the foreign elements open to the one the tag
                // names; reaching an HTML element hands the tag to rules the model lacks.
                for at in (0..self.open.len()).rev() {
                    let named = match &self.open[at] {
                        Open::Foreign(_, n) => n.get() == name,
                        Open::Integration(i) => INTEGRATION_POINTS[*i].0 == name,
                        Open::Html(_) => return Err(Unsure),
                    };
                    if named {
                        self.open.truncate(at);
                        return Ok(false);
                    }
                }
                Err(Unsure)
            }
        }
    }
}

/// HTML elements the tree builder never keeps open.
fn void(name: &[u8]) -> bool {
    matches!(
        name,
        b"area"
            | b"base"
            | b"basefont"
            | b"bgsound"
            | b"br"
            | b"col"
            | b"embed"
            | b"hr"
            | b"image"
            | b"img"
            | b"input"
            | b"keygen"
            | b"link"
            | b"meta"
            | b"param"
            | b"source"
            | b"track"
            | b"wbr"
    )
}

/// Whether a start tag in `ns` opens one of its integration points.
fn integration_point(
    ns: Namespace,
    name: &[u8],
    html: &[u8],
    attrs: &[(Range<usize>, Range<usize>)],
) -> Option<usize> {
    let i = INTEGRATION_POINTS
        .iter()
        .position(|(n, within)| *n == name && *within == ns)?;
    if name != b"annotation-xml" {
        return Some(i);
    }
    // Only an `annotation-xml` whose encoding is HTML holds HTML.
    let html_encoding = attrs.iter().any(|(n, v)| {
        html[n.clone()].eq_ignore_ascii_case(b"encoding")
            && (html[v.clone()].eq_ignore_ascii_case(b"text/html")
                || html[v.clone()].eq_ignore_ascii_case(b"application/xhtml+xml"))
    });
    html_encoding.then_some(i)
}

/// The tags after which a browser leaves SVG or MathML (the HTML standard's list in "parsing
/// tokens in foreign content").
fn leaves_foreign_content(name: &[u8]) -> bool {
    matches!(
        name,
        b"b" | b"big"
            | b"blockquote"
            | b"body"
            | b"br"
            | b"center"
            | b"code"
            | b"dd"
            | b"div"
            | b"dl"
            | b"dt"
            | b"em"
            | b"embed"
            | b"h1"
            | b"h2"
            | b"h3"
            | b"h4"
            | b"h5"
            | b"h6"
            | b"head"
            | b"hr"
            | b"i"
            | b"img"
            | b"li"
            | b"listing"
            | b"menu"
            | b"meta"
            | b"nobr"
            | b"ol"
            | b"p"
            | b"pre"
            | b"ruby"
            | b"s"
            | b"small"
            | b"span"
            | b"strong"
            | b"strike"
            | b"sub"
            | b"sup"
            | b"table"
            | b"tt"
            | b"u"
            | b"ul"
            | b"var"
    )
}

/// A `font` start tag with `color`, `face` or `size` leaves foreign content; a plain one
/// does not.
fn font_leaves_foreign_content(html: &[u8], attrs: &[(Range<usize>, Range<usize>)]) -> bool {
    attrs.iter().any(|(n, _)| {
        let n = &html[n.clone()];
        [&b"color"[..], b"face", b"size"]
            .iter()
            .any(|a| n.eq_ignore_ascii_case(a))
    })
}
