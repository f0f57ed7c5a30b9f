//! The extraction as lol_html did it until 2026-11-26, kept as the reference the scan is
//! checked against (`links::tests`).

use super::{PageLinks, Raw};
use lol_html::html_content::Element;
use lol_html::{ElementContentHandlers, HandlerResult, HtmlRewriter, Selector, Settings};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::LazyLock;
use url::Url;

fn decoded_str(value: &str) -> String {
    html_escape::decode_html_entities(value).into_owned()
}

fn rel_has_str(rel: Option<String>, word: &str) -> bool {
    rel.is_some_and(|r| {
        r.split_ascii_whitespace()
            .any(|w| w.eq_ignore_ascii_case(word))
    })
}

/// The selectors, parsed once (parsing them for every page cost as much as a tenth of the
/// extraction).
struct Selectors {
    base: Selector,
    a: Selector,
    frame: Selector,
    link: Selector,
    meta: Selector,
}

static SELECTORS: LazyLock<Option<Selectors>> = LazyLock::new(|| {
    Some(Selectors {
        base: "base[href]".parse().ok()?,
        a: "a[href], area[href]".parse().ok()?,
        frame: "frame[src], iframe[src]".parse().ok()?,
        link: "link[href]".parse().ok()?,
        meta: "meta[name][content]".parse().ok()?,
    })
});

fn on<'s, 'h>(
    selector: &'s Selector,
    handler: impl FnMut(&mut Element<'_, '_>) -> HandlerResult + 'h,
) -> (Cow<'s, Selector>, ElementContentHandlers<'h>) {
    (
        Cow::Borrowed(selector),
        ElementContentHandlers::default().element(handler),
    )
}

// One function: lol_html's handlers borrow what they collect for the life of the rewriter,
// so they are registered, run and read back in one scope.
pub(super) fn lol_links(page: &Url, html: &[u8]) -> PageLinks {
    let Some(sel) = SELECTORS.as_ref() else {
        return PageLinks::default();
    };
    let raw = RefCell::new(Raw::default());
    let settings = Settings::new()
        .append_element_content_handler(on(&sel.base, |el| {
            let mut r = raw.borrow_mut();
            if r.base.is_none() {
                r.base = el.get_attribute("href").map(|h| decoded_str(&h));
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.a, |el| {
            if !rel_has_str(el.get_attribute("rel"), "nofollow")
                && let Some(h) = el.get_attribute("href")
            {
                raw.borrow_mut().hrefs.push(decoded_str(&h).into());
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.frame, |el| {
            if let Some(h) = el.get_attribute("src") {
                raw.borrow_mut().hrefs.push(decoded_str(&h).into());
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.link, |el| {
            let rel = el
                .get_attribute("rel")
                .unwrap_or_default()
                .to_ascii_lowercase();
            let href = el
                .get_attribute("href")
                .map(|h| decoded_str(&h))
                .unwrap_or_default();
            let mut r = raw.borrow_mut();
            let words: Vec<&str> = rel.split_ascii_whitespace().collect();
            if words.contains(&"canonical") {
                r.canonical = Some(href.clone());
            }
            if words.contains(&"hub") {
                r.hub = Some(href.clone());
            }
            if words.contains(&"self") {
                r.topic = Some(href.clone());
            }
            // Stylesheets, icons and the like are resources of the page, not pages: only
            // alternates and navigation are followed.
            if words
                .iter()
                .any(|w| matches!(*w, "alternate" | "next" | "prev" | "canonical"))
            {
                r.hrefs.push(href.into());
            }
            Ok(())
        }))
        .append_element_content_handler(on(&sel.meta, |el| {
            let name = el.get_attribute("name").unwrap_or_default();
            if name.eq_ignore_ascii_case("robots") {
                let content = el
                    .get_attribute("content")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                let mut r = raw.borrow_mut();
                for directive in content.split(',').map(str::trim) {
                    match directive {
                        "noindex" => r.noindex = true,
                        "nofollow" => r.nofollow = true,
                        "none" => {
                            r.noindex = true;
                            r.nofollow = true;
                        }
                        _ => {}
                    }
                }
            }
            Ok(())
        }));
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    // A parse failure midway keeps what was found so far.
    let _ = rewriter.write(html).and_then(|_| rewriter.end());
    // lol_html read the pages the tests give it as UTF-8, as they are.
    let sniffed = crate::analyze::encoding::sniff(html, None);
    super::finish(page, raw.into_inner(), sniffed)
}
