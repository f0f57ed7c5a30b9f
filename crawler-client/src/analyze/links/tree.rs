//! A page read by a tree builder (html5ever, the HTML standard's tree construction as Servo
//! implements it), for the pages whose links the scan cannot read without one: framesets, and
//! SVG or MathML closed by an end tag that names an element open outside them
//! (`analyze::foreign`). Rare, so its cost (a document in memory, several times the scan's
//! CPU) is paid by few pages.

use super::Element;
use crate::analyze::foreign::Namespace;
use html5ever::tendril::TendrilSink;
use html5ever::{ParseOpts, ns, parse_document};
use markup5ever_rcdom::{NodeData, RcDom};
use std::borrow::Cow;

/// An element of the document, its attributes copied out of the tree.
pub(super) struct TreeElement {
    name: String,
    namespace: Namespace,
    /// (XLink namespace, local name, value).
    attrs: Vec<(bool, String, String)>,
}

/// The tree's values are copied out: the tree is dropped before the links are resolved.
impl<'h> Element<'h> for TreeElement {
    fn name(&self) -> &[u8] {
        self.name.as_bytes()
    }

    fn namespace(&self) -> Namespace {
        self.namespace
    }

    fn inert(&self) -> bool {
        // Template contents are not the template's children: they are never walked.
        false
    }

    fn attr(&self, name: &str) -> Option<Cow<'h, str>> {
        let (xlink, local) = match name.strip_prefix("xlink:") {
            Some(local) => (true, local),
            None => (false, name),
        };
        self.attrs
            .iter()
            .find(|(x, n, _)| *x == xlink && n == local)
            .map(|(_, _, v)| Cow::Owned(v.clone()))
    }
}

/// Most start tags a page read by the tree builder may have: its time grows with the square of
/// the elements open (each start tag looks through them), 0.2 s at 10,000 nested in a release
/// build.
const TAGS_MAX: usize = 10_000;

/// Whether the tree builder reads `text` in bounded time: at most [`TAGS_MAX`] start tags.
pub(super) fn affordable(text: &[u8]) -> bool {
    memchr::memchr_iter(b'<', text)
        .filter(|&i| text.get(i + 1).is_some_and(u8::is_ascii_alphabetic))
        .nth(TAGS_MAX)
        .is_none()
}

/// Calls `on_element` for every element of the document `text` builds, in tree order, leaving
/// out templates' contents.
pub(super) fn elements(text: &str, mut on_element: impl FnMut(&TreeElement)) {
    let opts = ParseOpts {
        tree_builder: html5ever::tree_builder::TreeBuilderOpts {
            // As the scan: `<noscript>` holds text, as in a browser running scripts.
            scripting_enabled: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let dom = parse_document(RcDom::default(), opts).one(text);
    // Depth first without recursion: a page may nest elements as deep as it likes.
    let mut stack = vec![dom.document.clone()];
    while let Some(node) = stack.pop() {
        if let NodeData::Element { name, attrs, .. } = &node.data {
            let namespace = if name.ns == ns!(svg) {
                Namespace::Svg
            } else if name.ns == ns!(mathml) {
                Namespace::MathMl
            } else {
                Namespace::Html
            };
            let attrs = attrs
                .borrow()
                .iter()
                .filter(|a| a.name.ns == ns!() || a.name.ns == ns!(xlink))
                .map(|a| {
                    (
                        a.name.ns == ns!(xlink),
                        a.name.local.to_string(),
                        a.value.to_string(),
                    )
                })
                .collect();
            on_element(&TreeElement {
                name: name.local.to_string(),
                namespace,
                attrs,
            });
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
}
