//! `getSitePublishingPreviewById`: a URL that opens a published site as one visitor would
//! see it, for an hour: the site space's published URL with a visitor token signed by the
//! site's own key (the one its visitor-authentication checks), holding the claims asked for.

use serde_json::{Map, Number, Value};

use super::sites::{self as rules, Urls};
use super::visitor;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::sites::SiteRow;

/// How long a preview URL opens the site.
pub const VALID_SECONDS: i64 = 3600;

/// The longest `claims` accepted, in bytes.
const MAX_CLAIMS: usize = 4096;

/// How deep `claims` may nest.
const MAX_DEPTH: usize = 8;

/// Parses Rison (the compact JSON the `claims` parameter is written in): `(a:1,b:!t)`,
/// `!(1,2)`, `'quoted !'text'`, bare words, `!t`, `!f`, `!n`. Errors name the parameter.
pub fn parse_rison(text: &str) -> ApiResult<Value> {
    if text.len() > MAX_CLAIMS {
        return Err(bad(&format!("at most {MAX_CLAIMS} bytes")));
    }
    let mut p = Rison {
        s: text.as_bytes(),
        at: 0,
    };
    let value = p.value(0)?;
    if p.at != p.s.len() {
        return Err(bad(&format!("unexpected text at byte {}", p.at)));
    }
    Ok(value)
}

fn bad(why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid query parameter `claims` (Rison): {why}."))
}

struct Rison<'a> {
    s: &'a [u8],
    at: usize,
}

impl Rison<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> ApiResult<()> {
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(bad(&format!(
                "`{}` expected at byte {}",
                b as char, self.at
            )))
        }
    }

    fn value(&mut self, depth: usize) -> ApiResult<Value> {
        if depth > MAX_DEPTH {
            return Err(bad(&format!("nested deeper than {MAX_DEPTH}")));
        }
        match self.peek() {
            Some(b'(') => {
                self.at += 1;
                let mut map = Map::new();
                if self.peek() == Some(b')') {
                    self.at += 1;
                    return Ok(Value::Object(map));
                }
                loop {
                    let key = match self.peek() {
                        Some(b'\'') => self.string()?,
                        _ => self.word()?,
                    };
                    self.eat(b':')?;
                    let v = self.value(depth + 1)?;
                    map.insert(key, v);
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        _ => break,
                    }
                }
                self.eat(b')')?;
                Ok(Value::Object(map))
            }
            Some(b'!') => {
                self.at += 1;
                match self.peek() {
                    Some(b't') => {
                        self.at += 1;
                        Ok(Value::Bool(true))
                    }
                    Some(b'f') => {
                        self.at += 1;
                        Ok(Value::Bool(false))
                    }
                    Some(b'n') => {
                        self.at += 1;
                        Ok(Value::Null)
                    }
                    Some(b'(') => {
                        self.at += 1;
                        let mut items = Vec::new();
                        if self.peek() == Some(b')') {
                            self.at += 1;
                            return Ok(Value::Array(items));
                        }
                        loop {
                            items.push(self.value(depth + 1)?);
                            match self.peek() {
                                Some(b',') => self.at += 1,
                                _ => break,
                            }
                        }
                        self.eat(b')')?;
                        Ok(Value::Array(items))
                    }
                    _ => Err(bad(&format!("unknown `!` escape at byte {}", self.at))),
                }
            }
            Some(b'\'') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Ok(Value::String(self.word()?)),
            None => Err(bad("a value is missing")),
        }
    }

    /// A quoted string: `!'` is a quote, `!!` an exclamation mark.
    fn string(&mut self) -> ApiResult<String> {
        self.eat(b'\'')?;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(bad("a string is not closed")),
                Some(b'\'') => {
                    self.at += 1;
                    break;
                }
                Some(b'!') => {
                    self.at += 1;
                    match self.peek() {
                        Some(c @ (b'\'' | b'!')) => {
                            out.push(c);
                            self.at += 1;
                        }
                        _ => return Err(bad(&format!("bad escape at byte {}", self.at))),
                    }
                }
                Some(c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| bad("a string is not UTF-8"))
    }

    /// A bare word: letters, digits and the few marks Rison leaves unquoted.
    fn word(&mut self) -> ApiResult<String> {
        let start = self.at;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric()
                || matches!(c, b'_' | b'-' | b'.' | b'/' | b'~')
                || c >= 0x80
            {
                self.at += 1;
            } else {
                break;
            }
        }
        if start == self.at {
            return Err(bad(&format!("a word expected at byte {start}")));
        }
        std::str::from_utf8(&self.s[start..self.at])
            .map(str::to_string)
            .map_err(|_| bad("a word is not UTF-8"))
    }

    fn number(&mut self) -> ApiResult<Value> {
        let start = self.at;
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
                self.at += 1;
            } else {
                break;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| bad(&format!("`{text}` is not a number")))
    }
}

/// The preview URL of `site` (published) at `site_space` (its default one when `None`) for
/// a visitor holding `claims`, valid for [`VALID_SECONDS`].
pub async fn preview_url(
    state: &AppState,
    site: &SiteRow,
    site_space: Option<&str>,
    claims: Map<String, Value>,
) -> ApiResult<String> {
    if site.published == 0 {
        return Err(ApiError::bad_request(
            "The site is not published: Quire previews a site as it is published.",
        ));
    }
    let structure = store::sites::structure(&state.db, &site.id).await?;
    let ss = match site_space {
        Some(id) => structure
            .site_spaces
            .iter()
            .find(|x| x.id == id)
            .ok_or_else(|| {
                ApiError::bad_request(format!("`siteSpace`: no site space `{id}` in this site."))
            })?,
        None => {
            let section = rules::default_section(site, &structure);
            rules::default_site_space(site, &structure, section)
                .ok_or_else(|| ApiError::bad_request("The site has no site space to preview."))?
        }
    };
    let share_key = if site.visibility == crate::values::SiteVisibility::ShareLink {
        let (links, _) = store::sites::list_share_links(&state.db, &site.id, None, 100).await?;
        Some(
            links
                .into_iter()
                .find(|l| l.active != 0)
                .map(|l| l.share_key)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "The site is shared by link and has no active share link to preview it with.",
                    )
                })?,
        )
    } else {
        None
    };
    let key = visitor::settings(state, &site.id).await?;
    let mut payload = claims;
    payload.insert(
        "exp".into(),
        Value::from(state.now().div_euclid(1000) + VALID_SECONDS),
    );
    let token = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &payload,
        &jsonwebtoken::EncodingKey::from_secret(key.private_key.as_bytes()),
    )
    .map_err(ApiError::internal)?;
    let base = Urls::new(state, site, share_key.as_deref()).site_space(site, &structure, ss);
    Ok(format!("{base}?jwt_token={token}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rison_reads_what_json_would_hold() {
        assert_eq!(
            parse_rison("(beta:!t,plan:'pro !'s',n:-1.5,list:!(a,2,!n),o:(),e:!())").unwrap(),
            json!({ "beta": true, "plan": "pro 's", "n": -1.5, "list": ["a", 2, null], "o": {}, "e": [] })
        );
        assert_eq!(parse_rison("'!!'").unwrap(), json!("!"));
        for bad in ["(a:", "(a:1", "'x", "!x", "(a 1)", "(:1)", "1 2", "", "--"] {
            assert!(parse_rison(bad).is_err(), "{bad}");
        }
        let deep = format!("{}1{}", "!(".repeat(20), ")".repeat(20));
        assert!(parse_rison(&deep).is_err());
        assert!(parse_rison(&"a".repeat(5000)).is_err());
    }
}
