//! The small part of HTML that GitBook writes into markdown: figures, pictures, tables,
//! buttons, mentions, icons… A fragment is parsed into a tree of elements (attributes kept
//! in order) and decoded text; anything malformed or unbalanced is refused, so that the
//! caller keeps the source as raw content instead of guessing.

/// An HTML node: an element or decoded text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HNode {
    /// An element with its attributes (in source order) and children.
    El(HElement),
    /// Text, with character references decoded.
    Text(String),
}

/// An HTML element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HElement {
    /// Lower-case tag name.
    pub name: String,
    /// Attributes in source order; `None` for a boolean attribute (`data-hidden`).
    pub attrs: Vec<(String, Option<String>)>,
    /// Children (none for void elements).
    pub children: Vec<HNode>,
}

/// Elements that never have children or a closing tag.
const VOID: [&str; 9] = [
    "img", "br", "source", "hr", "input", "col", "meta", "link", "wbr",
];

/// Elements whose bodies GitBook writes as raw text (code).
const RAW_TEXT: [&str; 2] = ["script", "style"];

impl HElement {
    /// The value of an attribute (empty for a boolean one).
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_deref().unwrap_or(""))
    }

    /// Attribute names, in order.
    pub fn attr_names(&self) -> impl Iterator<Item = &str> {
        self.attrs.iter().map(|(k, _)| k.as_str())
    }

    /// Child elements, ignoring whitespace-only text; `None` when other text is present.
    pub fn element_children(&self) -> Option<Vec<&HElement>> {
        let mut out = Vec::new();
        for c in &self.children {
            match c {
                HNode::El(e) => out.push(e),
                HNode::Text(t) if t.trim().is_empty() => {}
                HNode::Text(_) => return None,
            }
        }
        Some(out)
    }

    /// Concatenated text of the element and its descendants.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let mut stack: Vec<&HNode> = self.children.iter().rev().collect();
        while let Some(n) = stack.pop() {
            match n {
                HNode::Text(t) => out.push_str(t),
                HNode::El(e) => stack.extend(e.children.iter().rev()),
            }
        }
        out
    }
}

/// Parses an HTML fragment. `None` when it is not well formed: an unclosed or mismatched
/// tag, a stray `<`, a comment or a declaration (kept raw by the callers).
pub(crate) fn parse_fragment(src: &str) -> Option<Vec<HNode>> {
    let mut stack: Vec<HElement> = vec![HElement {
        name: String::new(),
        attrs: Vec::new(),
        children: Vec::new(),
    }];
    let mut i = 0;
    let bytes = src.as_bytes();
    let mut text_start = 0;
    let flush = |stack: &mut Vec<HElement>, from: usize, to: usize| {
        if to > from {
            let t = decode_entities(&src[from..to]);
            stack
                .last_mut()
                .expect("root stays")
                .children
                .push(HNode::Text(t));
        }
    };
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        flush(&mut stack, text_start, i);
        let rest = &src[i..];
        if let Some(close) = rest.strip_prefix("</") {
            let end = close.find('>')?;
            let name = close[..end].trim().to_ascii_lowercase();
            let open = stack.pop()?;
            if open.name != name || stack.is_empty() {
                return None;
            }
            stack
                .last_mut()
                .expect("checked")
                .children
                .push(HNode::El(open));
            i += 2 + end + 1;
        } else {
            let (tag, len, self_closing) = parse_open_tag(rest)?;
            i += len;
            let void = VOID.contains(&tag.name.as_str()) || self_closing;
            if RAW_TEXT.contains(&tag.name.as_str()) {
                let close = format!("</{}>", tag.name);
                let end = src[i..].find(&close)?;
                let mut el = tag;
                if end > 0 {
                    el.children.push(HNode::Text(src[i..i + end].to_string()));
                }
                i += end + close.len();
                stack
                    .last_mut()
                    .expect("root stays")
                    .children
                    .push(HNode::El(el));
            } else if void {
                stack
                    .last_mut()
                    .expect("root stays")
                    .children
                    .push(HNode::El(tag));
            } else {
                // Elements nest only as deep as the input's own tags; the depth of the
                // documents built from them is checked by the engine's bound.
                if stack.len() > crate::limits::MAX_DEPTH * 2 {
                    return None;
                }
                stack.push(tag);
            }
        }
        text_start = i;
    }
    flush(&mut stack, text_start, bytes.len());
    if stack.len() != 1 {
        return None;
    }
    Some(stack.pop().expect("root").children)
}

/// Parses `<name attr="v" flag>` at the start of `s`: the element, the length consumed and
/// whether it ended with `/>`.
fn parse_open_tag(s: &str) -> Option<(HElement, usize, bool)> {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let mut k = 1;
    let start = k;
    while k < chars.len() && (chars[k].1.is_ascii_alphanumeric() || chars[k].1 == '-') {
        k += 1;
    }
    if k == start || !chars[start].1.is_ascii_alphabetic() {
        return None;
    }
    let name = s[chars[start].0..chars.get(k).map_or(s.len(), |c| c.0)].to_ascii_lowercase();
    let mut attrs = Vec::new();
    loop {
        while k < chars.len() && chars[k].1.is_whitespace() {
            k += 1;
        }
        let c = chars.get(k)?.1;
        if c == '>' {
            let el = HElement {
                name,
                attrs,
                children: Vec::new(),
            };
            return Some((el, chars[k].0 + 1, false));
        }
        if c == '/' {
            if chars.get(k + 1)?.1 != '>' {
                return None;
            }
            let el = HElement {
                name,
                attrs,
                children: Vec::new(),
            };
            return Some((el, chars[k + 1].0 + 1, true));
        }
        let a = k;
        while k < chars.len()
            && !chars[k].1.is_whitespace()
            && !matches!(chars[k].1, '=' | '>' | '/' | '"' | '\'' | '<')
        {
            k += 1;
        }
        if k == a {
            return None;
        }
        // An unterminated tag (`<a%` at the end) is no tag.
        let key = s[chars[a].0..chars.get(k)?.0].to_ascii_lowercase();
        if chars.get(k)?.1 != '=' {
            attrs.push((key, None));
            continue;
        }
        k += 1;
        let q = chars.get(k)?.1;
        let value = if q == '"' || q == '\'' {
            let v0 = k + 1;
            let mut j = v0;
            while j < chars.len() && chars[j].1 != q {
                j += 1;
            }
            let v = s[chars.get(v0).map_or(s.len(), |c| c.0)..chars.get(j)?.0].to_string();
            k = j + 1;
            v
        } else {
            let v0 = k;
            while k < chars.len() && !chars[k].1.is_whitespace() && chars[k].1 != '>' {
                k += 1;
            }
            s[chars[v0].0..chars.get(k).map_or(s.len(), |c| c.0)].to_string()
        };
        attrs.push((key, Some(decode_entities(&value))));
    }
}

/// Decodes character references (`&#x3C;`, `&#60;`, `&amp;`…); unknown ones stay as written.
pub(crate) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail[1..].find(';').map(|e| e + 1).filter(|e| *e <= 32);
        let decoded = end.and_then(|e| {
            let name = &tail[1..e];
            let c = if let Some(hex) = name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
            } else if let Some(dec) = name.strip_prefix('#') {
                dec.parse::<u32>().ok().and_then(char::from_u32)
            } else {
                match name {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    "nbsp" => Some('\u{a0}'),
                    _ => None,
                }
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &tail[e + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Escapes text for HTML content the way GitBook writes it: `&` and `<` as hexadecimal
/// references.
pub(crate) fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&#x26;"),
            '<' => out.push_str("&#x3C;"),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes an attribute value (written between double quotes).
pub(crate) fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&#x26;"),
            '"' => out.push_str("&#x22;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_parse_into_trees() {
        let nodes = parse_fragment(
            "<figure><img src=\"a.png\" alt=\"A &#x26; B\"><figcaption><p>Cap <em>x</em></p></figcaption></figure>",
        )
        .unwrap();
        let HNode::El(fig) = &nodes[0] else { panic!() };
        assert_eq!(fig.name, "figure");
        let kids = fig.element_children().unwrap();
        assert_eq!(kids[0].attr("alt"), Some("A & B"));
        assert_eq!(kids[1].text(), "Cap x");
        let t = parse_fragment("<th data-hidden data-type=\"image\">x</th>").unwrap();
        let HNode::El(th) = &t[0] else { panic!() };
        assert_eq!(th.attr("data-hidden"), Some(""));
        assert_eq!(
            th.attr_names().collect::<Vec<_>>(),
            ["data-hidden", "data-type"]
        );
    }

    #[test]
    fn malformed_fragments_are_refused() {
        assert!(parse_fragment("<p>open").is_none());
        assert!(parse_fragment("<p></div>").is_none());
        assert!(parse_fragment("a < b").is_none());
        assert!(parse_fragment("<!-- c -->").is_none());
        assert_eq!(
            parse_fragment("plain &#x3C;text").unwrap(),
            vec![HNode::Text("plain <text".into())]
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_text("a < b & c > d"), "a &#x3C; b &#x26; c > d");
        assert_eq!(
            decode_entities("&#x3C;&lt;&amp;&#38;&unknown;"),
            "<<&&&unknown;"
        );
    }
}
