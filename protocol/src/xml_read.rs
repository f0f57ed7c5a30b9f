//! A namespace-aware pull cursor over quick-xml shared by the document parsers.
//!
//! It yields element openings (with resolved attributes) and closings (with the element's own
//! text, entity references resolved), and turns everything a hostile document can do into a
//! typed [`ParseError`]: entity definitions are never expanded, nesting and text are bounded,
//! and a document that stops inside an element is reported as truncated.

use crate::error::{Format, ParseError};
use crate::namespaces::Ns;
use quick_xml::XmlVersion;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::Event;
use quick_xml::events::attributes::Attribute;
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

/// Bounds on the shape of a document, on top of each format's own limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShapeLimits {
    pub max_depth: usize,
    pub max_text: usize,
}

/// One attribute, namespace resolved (unprefixed attributes have no namespace).
#[derive(Debug, Default)]
pub(crate) struct Attr {
    pub ns: Option<Ns>,
    pub local: String,
    pub value: String,
}

/// What the cursor saw next.
pub(crate) enum Node<'c> {
    Open {
        ns: Ns,
        ns_uri: &'c str,
        local: &'c str,
        attrs: &'c [Attr],
        depth: usize,
    },
    Close {
        ns: Ns,
        local: &'c str,
        text: &'c str,
        depth: usize,
    },
    End,
}

struct Frame {
    ns: Ns,
    ns_uri: String,
    local: String,
    /// Once an element has a child, its own text is never read (none of the formats uses mixed
    /// content), so it stops accumulating: whitespace between 50,000 entries is not kept.
    has_children: bool,
}

pub(crate) struct XmlCursor<'i> {
    reader: NsReader<&'i [u8]>,
    format: Format,
    limits: ShapeLimits,
    /// Open elements are `frames[..depth]`; frames beyond are kept to reuse their buffers, and
    /// `frames[depth]` is the element just closed, which `Close` borrows.
    frames: Vec<Frame>,
    depth: usize,
    texts: Vec<String>,
    attrs: Vec<Attr>,
    attr_len: usize,
    /// Set after an empty element `<x/>` was reported open: its close comes next.
    pending_close: bool,
    seen_root: bool,
}

impl<'i> XmlCursor<'i> {
    pub(crate) fn new(input: &'i [u8], format: Format, limits: ShapeLimits) -> Self {
        let mut reader = NsReader::from_reader(input);
        let config = reader.config_mut();
        config.check_end_names = true;
        config.expand_empty_elements = false;
        XmlCursor {
            reader,
            format,
            limits,
            frames: Vec::new(),
            depth: 0,
            texts: Vec::new(),
            attrs: Vec::new(),
            attr_len: 0,
            pending_close: false,
            seen_root: false,
        }
    }

    fn xml_error(&self, message: impl std::fmt::Display) -> ParseError {
        ParseError::Xml {
            format: self.format,
            position: self
                .reader
                .error_position()
                .max(self.reader.buffer_position()),
            message: message.to_string(),
        }
    }

    fn escape_error(&self, err: quick_xml::escape::EscapeError) -> ParseError {
        use quick_xml::escape::EscapeError;
        match err {
            EscapeError::UnrecognizedEntity(_, name) => ParseError::UndefinedEntity {
                format: self.format,
                name,
            },
            other => self.xml_error(other),
        }
    }

    fn push_text(&mut self, s: &str) -> Result<(), ParseError> {
        let depth = self.depth;
        if depth == 0 || self.frames[depth - 1].has_children {
            return Ok(()); // outside the root (only whitespace gets here) or between children
        }
        let top = &mut self.texts[depth - 1];
        if top.len() + s.len() > self.limits.max_text {
            return Err(ParseError::Limit {
                format: self.format,
                what: "text of one element",
                limit: self.limits.max_text as u64,
            });
        }
        top.push_str(s);
        Ok(())
    }

    fn open(&mut self, start: &quick_xml::events::BytesStart<'_>) -> Result<(), ParseError> {
        if self.depth >= self.limits.max_depth {
            return Err(ParseError::Limit {
                format: self.format,
                what: "element nesting",
                limit: self.limits.max_depth as u64,
            });
        }
        if self.depth == 0 {
            if self.seen_root {
                return Err(self.xml_error("a second root element"));
            }
            self.seen_root = true;
        }
        // Namespace declarations on this element must be in scope for its own name.
        let (resolved, local) = self.reader.resolver().resolve_element(start.name());
        let (ns, ns_uri) = match resolved {
            ResolveResult::Bound(n) => (Ns::from_uri(n.0), n.0),
            ResolveResult::Unbound => (Ns::None, ""),
            ResolveResult::Unknown(prefix) => {
                return Err(self.xml_error(format!("undeclared namespace prefix {prefix:?}")));
            }
        };
        if self.frames.len() == self.depth {
            self.frames.push(Frame {
                ns,
                ns_uri: String::new(),
                local: String::new(),
                has_children: false,
            });
        }
        let frame = &mut self.frames[self.depth];
        frame.ns = ns;
        frame.ns_uri.clear();
        frame.ns_uri.push_str(ns_uri);
        frame.local.clear();
        frame.local.push_str(local.as_ref());
        frame.has_children = false;
        self.attr_len = 0;
        for attr in start.attributes() {
            let attr: Attribute<'_> = attr.map_err(|e| self.xml_error(e))?;
            if attr.key.as_namespace_binding().is_some() {
                continue;
            }
            let (resolved, attr_local) = self.reader.resolver().resolve_attribute(attr.key);
            let attr_ns = match resolved {
                ResolveResult::Bound(n) => Some(Ns::from_uri(n.0)),
                ResolveResult::Unbound => None,
                ResolveResult::Unknown(prefix) => {
                    return Err(self.xml_error(format!("undeclared namespace prefix {prefix:?}")));
                }
            };
            let value = attr
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|e| match e {
                    quick_xml::Error::Escape(esc) => self.escape_error(esc),
                    other => self.xml_error(other),
                })?;
            if value.len() > self.limits.max_text {
                return Err(ParseError::Limit {
                    format: self.format,
                    what: "attribute value",
                    limit: self.limits.max_text as u64,
                });
            }
            if self.attrs.len() == self.attr_len {
                self.attrs.push(Attr::default());
            }
            let slot = &mut self.attrs[self.attr_len];
            slot.ns = attr_ns;
            slot.local.clear();
            slot.local.push_str(attr_local.as_ref());
            slot.value.clear();
            slot.value.push_str(&value);
            self.attr_len += 1;
        }
        if self.depth > 0 && !self.frames[self.depth - 1].has_children {
            self.frames[self.depth - 1].has_children = true;
            self.texts[self.depth - 1].clear();
        }
        self.depth += 1;
        let depth = self.depth;
        if self.texts.len() < depth {
            self.texts.push(String::new());
        }
        self.texts[depth - 1].clear();
        Ok(())
    }

    fn opened(&self) -> Node<'_> {
        let top = &self.frames[self.depth - 1];
        Node::Open {
            ns: top.ns,
            ns_uri: &top.ns_uri,
            local: &top.local,
            attrs: &self.attrs[..self.attr_len],
            depth: self.depth,
        }
    }

    fn close(&mut self) -> Node<'_> {
        if self.depth == 0 {
            return Node::End;
        }
        let depth = self.depth;
        self.depth -= 1;
        let frame = &self.frames[depth - 1];
        Node::Close {
            ns: frame.ns,
            local: &frame.local,
            text: &self.texts[depth - 1],
            depth,
        }
    }

    /// The next opening or closing of an element, or the end of the document.
    pub(crate) fn next_node(&mut self) -> Result<Node<'_>, ParseError> {
        if self.pending_close {
            self.pending_close = false;
            return Ok(self.close());
        }
        loop {
            let event = self.reader.read_event().map_err(|e| match e {
                quick_xml::Error::Escape(esc) => self.escape_error(esc),
                other => self.xml_error(other),
            })?;
            match event {
                Event::Start(start) => {
                    self.open(&start)?;
                    return Ok(self.opened());
                }
                Event::Empty(start) => {
                    self.open(&start)?;
                    self.pending_close = true;
                    return Ok(self.opened());
                }
                Event::End(_) => {
                    if self.depth == 0 {
                        return Err(self.xml_error("closing tag without an open element"));
                    }
                    return Ok(self.close());
                }
                Event::Text(text) => {
                    let content = text.xml10_content();
                    if self.depth == 0 && !content.trim().is_empty() {
                        return Err(self.xml_error("text outside the root element"));
                    }
                    self.push_text(&content)?;
                }
                Event::CData(cdata) => {
                    let content = cdata.xml10_content();
                    self.push_text(&content)?;
                }
                Event::GeneralRef(reference) => {
                    if reference.is_char_ref() {
                        let ch = reference
                            .resolve_char_ref()
                            .map_err(|e| self.xml_error(e))?
                            .ok_or_else(|| self.xml_error("bad character reference"))?;
                        let mut buf = [0u8; 4];
                        self.push_text(ch.encode_utf8(&mut buf))?;
                    } else {
                        let name = reference.xml10_content();
                        match resolve_predefined_entity(&name) {
                            Some(replacement) => self.push_text(replacement)?,
                            None => {
                                return Err(ParseError::UndefinedEntity {
                                    format: self.format,
                                    name: name.into_owned(),
                                });
                            }
                        }
                    }
                }
                Event::Eof => {
                    if self.depth > 0 {
                        return Err(ParseError::Truncated {
                            format: self.format,
                            open_element: self.frames[self.depth - 1].local.clone(),
                        });
                    }
                    if !self.seen_root {
                        return Err(self.xml_error("no root element (empty document)"));
                    }
                    return Ok(Node::End);
                }
                // Declarations, comments, processing instructions and DTDs carry nothing we
                // read. DTD entity declarations are deliberately never expanded.
                Event::Decl(_) | Event::Comment(_) | Event::PI(_) | Event::DocType(_) => {}
            }
        }
    }

    /// Skips the rest of the element just opened, including its children.
    pub(crate) fn skip_element(&mut self) -> Result<(), ParseError> {
        let depth = self.depth;
        loop {
            match self.next_node()? {
                Node::Close { depth: d, .. } if d == depth => return Ok(()),
                Node::End => {
                    return Err(ParseError::Truncated {
                        format: self.format,
                        open_element: String::new(),
                    });
                }
                _ => {}
            }
        }
    }
}

/// The value of the attribute `local` in namespace `ns` (`None` for unprefixed).
pub(crate) fn attr<'a>(attrs: &'a [Attr], ns: Option<Ns>, local: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|a| a.ns == ns && a.local == local)
        .map(|a| a.value.as_str())
}
