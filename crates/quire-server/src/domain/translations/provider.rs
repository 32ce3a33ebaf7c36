//! Machine-translation providers: an OpenAI-compatible chat-completions API and the
//! LibreTranslate API. Texts go in batches through the safe fetcher; a batch that fails
//! for a transient reason is retried with exponential backoff. Keys travel only in the
//! requests' headers or bodies, never in logs or in the reasons given to users.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::config::{TranslationConfig, TranslationProvider};
use crate::fetch::FetchError;
use crate::state::AppState;

/// Largest answer read from a provider.
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// What a translation is asked for.
pub struct Ask<'a> {
    /// Source language (official code).
    pub from: &'a str,
    /// Target language (official code).
    pub to: &'a str,
    /// Guidance from the translation's instructions (plain text; may be empty).
    pub instructions: &'a str,
    /// The organization's glossary for these languages: (source term, target term).
    pub glossary: &'a [(String, String)],
}

/// Translates every text, in order; `Err` holds a reason fit for users.
pub async fn translate(
    state: &AppState,
    config: &TranslationConfig,
    provider: &TranslationProvider,
    ask: &Ask<'_>,
    texts: &[String],
) -> Result<Vec<String>, String> {
    let mut out = Vec::with_capacity(texts.len());
    for batch in batches(texts, config.batch_segments, config.batch_chars) {
        out.extend(with_retries(state, config, provider, ask, batch).await?);
    }
    Ok(out)
}

/// Splits `texts` into batches of at most `max_items` texts and about `max_chars` characters
/// (a longer text goes alone).
fn batches(texts: &[String], max_items: usize, max_chars: usize) -> Vec<&[String]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = 0;
    for (i, t) in texts.iter().enumerate() {
        let len = t.chars().count();
        if i > start && (i - start >= max_items.max(1) || chars + len > max_chars) {
            out.push(&texts[start..i]);
            start = i;
            chars = 0;
        }
        chars += len;
    }
    if start < texts.len() {
        out.push(&texts[start..]);
    }
    out
}

/// One failed attempt: whether another may succeed, and why it failed.
struct Failed {
    transient: bool,
    reason: String,
}

async fn with_retries(
    state: &AppState,
    config: &TranslationConfig,
    provider: &TranslationProvider,
    ask: &Ask<'_>,
    batch: &[String],
) -> Result<Vec<String>, String> {
    let attempts = config.attempts.max(1);
    let mut backoff = Duration::from_millis(config.backoff_ms);
    let mut attempt = 1;
    loop {
        match once(state, config, provider, ask, batch).await {
            Ok(done) => return Ok(done),
            Err(f) if f.transient && attempt < attempts => {
                tracing::info!(attempt, reason = %f.reason, "translation provider failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = backoff.saturating_mul(2);
                attempt += 1;
            }
            Err(f) => {
                return Err(format!(
                    "The translation provider failed after {attempt} attempt(s): {}",
                    f.reason
                ))
            }
        }
    }
}

async fn once(
    state: &AppState,
    config: &TranslationConfig,
    provider: &TranslationProvider,
    ask: &Ask<'_>,
    batch: &[String],
) -> Result<Vec<String>, Failed> {
    let timeout = Duration::from_millis(config.timeout_ms);
    let answer = match provider {
        TranslationProvider::OpenAi {
            base_url,
            model,
            key,
        } => {
            let body = openai_request(model, ask, batch);
            let auth = key.as_ref().map(|k| format!("Bearer {}", k.expose()));
            let headers: Vec<(&str, &str)> = auth
                .as_deref()
                .map(|a| vec![("authorization", a)])
                .unwrap_or_default();
            let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
            let fetched = post(state, &url, &headers, &body, timeout).await?;
            openai_answer(&fetched, batch.len())
        }
        TranslationProvider::LibreTranslate { url, key } => {
            let mut body = json!({
                "q": batch,
                "source": libre_code(ask.from),
                "target": libre_code(ask.to),
                "format": "text",
            });
            if let Some(key) = key {
                body["api_key"] = json!(key.expose());
            }
            let url = format!("{}/translate", url.trim_end_matches('/'));
            let fetched = post(state, &url, &[], &body, timeout).await?;
            libre_answer(&fetched, batch.len())
        }
    };
    answer.map_err(|reason| Failed {
        // A model may answer badly once and well the next time.
        transient: true,
        reason,
    })
}

async fn post(
    state: &AppState,
    url: &str,
    headers: &[(&str, &str)],
    body: &serde_json::Value,
    timeout: Duration,
) -> Result<Vec<u8>, Failed> {
    let bytes = serde_json::to_vec(body).map_err(|e| Failed {
        transient: false,
        reason: e.to_string(),
    })?;
    match state
        .fetcher
        .post_json(url, headers, &bytes, MAX_ANSWER_BYTES, timeout)
        .await
    {
        Ok(f) => Ok(f.bytes.to_vec()),
        Err(e) => Err(Failed {
            transient: e.is_transient(),
            reason: match e {
                FetchError::Status(code) => format!("it answered with HTTP status {code}"),
                FetchError::BadUrl => "its configured URL is not an absolute http(s) URL".into(),
                other => format!("its answer {other}"),
            },
        }),
    }
}

/// The chat-completions request: the texts as a JSON object, the rules and the
/// instructions as the system message.
fn openai_request(model: &str, ask: &Ask<'_>, batch: &[String]) -> serde_json::Value {
    let mut system = format!(
        "You translate documentation from the language with code `{}` to the language with \
         code `{}`. The user message is a JSON object {{\"segments\": [...]}}: each string \
         is one run of text from a page. Translate each string on its own and answer with \
         only a JSON object {{\"segments\": [...]}} holding exactly {} strings, in the same \
         order. Keep product names, identifiers and placeholders as they are; add no markup.",
        ask.from,
        ask.to,
        batch.len()
    );
    if !ask.instructions.trim().is_empty() {
        system.push_str("\n\nGuidance from the documentation's maintainers:\n");
        system.push_str(ask.instructions.trim());
    }
    if !ask.glossary.is_empty() {
        system.push_str(
            "\n\nThe organization's glossary: wherever a term on the left appears, translate it \
             as the term on the right (JSON pairs):\n",
        );
        for pair in ask.glossary {
            system.push_str(&json!(pair).to_string());
            system.push('\n');
        }
    }
    json!({
        "model": model,
        "temperature": 0,
        "messages": [
            { "role": "system", "content": system },
            { "role": "user", "content": json!({ "segments": batch }).to_string() },
        ],
    })
}

#[derive(Deserialize)]
struct ChatAnswer {
    choices: Vec<ChatChoice>,
}

#[derive(Deserialize)]
struct ChatChoice {
    message: ChatMessage,
}

#[derive(Deserialize)]
struct ChatMessage {
    content: Option<String>,
}

#[derive(Deserialize)]
struct Segments {
    segments: Vec<String>,
}

fn openai_answer(bytes: &[u8], expected: usize) -> Result<Vec<String>, String> {
    let answer: ChatAnswer = serde_json::from_slice(bytes)
        .map_err(|_| "its answer is not a chat completion".to_string())?;
    let content = answer
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message.content)
        .ok_or("its answer holds no message")?;
    // Models sometimes wrap the object in a code fence or a sentence: take the object.
    let object = match (content.find('{'), content.rfind('}')) {
        (Some(a), Some(b)) if a < b => &content[a..=b],
        _ => return Err("its answer holds no JSON object".into()),
    };
    let parsed: Segments = serde_json::from_str(object)
        .map_err(|_| "its answer is not a {\"segments\": [...]} object".to_string())?;
    check_count(parsed.segments, expected)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LibreAnswer {
    translated_text: Vec<String>,
}

fn libre_answer(bytes: &[u8], expected: usize) -> Result<Vec<String>, String> {
    let parsed: LibreAnswer = serde_json::from_slice(bytes)
        .map_err(|_| "its answer holds no `translatedText` list".to_string())?;
    check_count(parsed.translated_text, expected)
}

fn check_count(texts: Vec<String>, expected: usize) -> Result<Vec<String>, String> {
    if texts.len() == expected {
        Ok(texts)
    } else {
        Err(format!(
            "it answered {} texts for {expected} sent",
            texts.len()
        ))
    }
}

/// LibreTranslate's code for an official language code.
fn libre_code(code: &str) -> &str {
    match code {
        "pt-br" => "pt-BR",
        "no" => "nb",
        "zh" => "zh-Hans",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_both_caps() {
        let texts: Vec<String> = ["aaaa", "bb", "cccccc", "d", "e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let sizes: Vec<usize> = batches(&texts, 2, 7).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
        let one: Vec<usize> = batches(&texts, 10, 1).iter().map(|b| b.len()).collect();
        assert_eq!(one, vec![1, 1, 1, 1, 1]);
        assert!(batches(&[], 3, 3).is_empty());
    }

    #[test]
    fn a_fenced_answer_is_read() {
        let body = json!({ "choices": [{ "message": { "content": "```json\n{\"segments\": [\"a\", \"b\"]}\n```" } }] });
        let got = openai_answer(body.to_string().as_bytes(), 2).unwrap();
        assert_eq!(got, vec!["a", "b"]);
        assert!(openai_answer(body.to_string().as_bytes(), 3).is_err());
    }
}
