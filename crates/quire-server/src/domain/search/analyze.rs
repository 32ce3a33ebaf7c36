//! Text analysis shared by indexing and querying: Unicode word boundaries, lower case,
//! stop words and Snowball stems per language, and diacritic folding.
//!
//! A word has two forms in the index: its *surface* (lower case, folded), kept in the word
//! dictionary for prefix and typo look-ups, and its *term* (the folded stem), which the
//! postings are keyed by. The same functions analyse documents and queries, so both
//! always agree.

use std::collections::BTreeMap;

use quire_content::model::{Page, Revision};
use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Bumped whenever analysis changes in a way that changes terms: an index built by another
/// version is rebuilt on its next use.
pub const VERSION: u32 = 2;

/// Words longer than this (hashes, encoded data) are not indexed.
const MAX_WORD_CHARS: usize = 40;

/// How a space's text is analysed.
pub struct Analyzer {
    code: &'static str,
    stemmer: Option<Stemmer>,
    stop: &'static [&'static str],
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Analyzer({})", self.code)
    }
}

/// One analysed word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Lower case, folded.
    pub surface: String,
    /// Folded stem: the indexed term. A stop word's term is `~` and its surface: it is
    /// indexed for phrases only, apart from every other term.
    pub term: String,
    /// A stop word: not ranked, not in the word dictionary.
    pub stop: bool,
}

impl Analyzer {
    /// The analyzer for a space language (`TranslationLanguage` code); English when unset.
    /// Languages without a Snowball stemmer are indexed by their unstemmed words.
    pub fn for_language(language: Option<&str>) -> Analyzer {
        let code = language.unwrap_or("en");
        let (code, algorithm, stop): (&'static str, Option<Algorithm>, &'static [&'static str]) =
            match code {
                "en" => ("en", Some(Algorithm::English), STOP_EN),
                "fr" => ("fr", Some(Algorithm::French), STOP_FR),
                "de" => ("de", Some(Algorithm::German), STOP_DE),
                "es" => ("es", Some(Algorithm::Spanish), STOP_ES),
                "it" => ("it", Some(Algorithm::Italian), STOP_IT),
                "pt" | "pt-br" => ("pt", Some(Algorithm::Portuguese), STOP_PT),
                "nl" => ("nl", Some(Algorithm::Dutch), STOP_NL),
                "ru" => ("ru", Some(Algorithm::Russian), &[]),
                "sv" => ("sv", Some(Algorithm::Swedish), &[]),
                "no" => ("no", Some(Algorithm::Norwegian), &[]),
                "da" => ("da", Some(Algorithm::Danish), &[]),
                "fi" => ("fi", Some(Algorithm::Finnish), &[]),
                "el" => ("el", Some(Algorithm::Greek), &[]),
                "hu" => ("hu", Some(Algorithm::Hungarian), &[]),
                "ro" => ("ro", Some(Algorithm::Romanian), &[]),
                "tr" => ("tr", Some(Algorithm::Turkish), &[]),
                "ar" => ("ar", Some(Algorithm::Arabic), &[]),
                _ => ("none", None, &[]),
            };
        Analyzer {
            code,
            stemmer: algorithm.map(Stemmer::create),
            stop,
        }
    }

    /// What the index records as its analysis: the stemming language and [`VERSION`].
    pub fn key(&self) -> String {
        format!("{}/{VERSION}", self.code)
    }

    /// Analyses one word as produced by [`words`]; `None` for words that are not indexed.
    pub fn word(&self, raw: &str) -> Option<Word> {
        if raw.chars().count() > MAX_WORD_CHARS {
            return None;
        }
        let lower = raw.to_lowercase().replace('’', "'");
        let lower = lower.trim_matches('\'');
        if lower.is_empty() {
            return None;
        }
        let surface = fold(lower);
        if self.stop.binary_search(&lower).is_ok() {
            return Some(Word {
                term: format!("~{surface}"),
                surface,
                stop: true,
            });
        }
        let term = match &self.stemmer {
            Some(s) => fold(&s.stem(lower)),
            None => surface.clone(),
        };
        Some(Word {
            surface,
            term,
            stop: false,
        })
    }
}

/// The words of `text` with their positions (word index, by Unicode word boundaries).
/// Words joined by underscores (`snake_case`) also yield their parts, at the same position.
pub fn words(text: &str) -> impl Iterator<Item = (u32, &str)> {
    text.unicode_words().enumerate().flat_map(|(i, w)| {
        let at = u32::try_from(i).unwrap_or(u32::MAX);
        let parts: Vec<(u32, &str)> = if w.contains('_') {
            std::iter::once((at, w))
                .chain(w.split('_').filter(|p| !p.is_empty()).map(move |p| (at, p)))
                .collect()
        } else {
            vec![(at, w)]
        };
        parts
    })
}

/// Lower-case Latin letters with diacritics folded to their base letters; other characters
/// are kept.
pub fn fold(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match fold_char(c) {
            Some(s) => out.push_str(s),
            None => out.push(c),
        }
    }
    out
}

fn fold_char(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'č' => "c",
        'ď' | 'đ' | 'ð' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => "e",
        'ğ' => "g",
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'į' | 'ı' => "i",
        'ł' | 'ľ' | 'ĺ' => "l",
        'ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
        'œ' => "oe",
        'ř' | 'ŕ' => "r",
        'ś' | 'š' | 'ş' | 'ș' => "s",
        'ß' => "ss",
        'ť' | 'ţ' | 'ț' => "t",
        'þ' => "th",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' | 'ų' => "u",
        'ý' | 'ÿ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => return None,
    })
}

/// Where one term occurs in one page: word positions in each field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermHits {
    /// Positions in the page title.
    pub title: Vec<u32>,
    /// The sections it occurs in, in order.
    pub sections: Vec<SectionHits>,
}

/// Where one term occurs in one section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SectionHits {
    /// Section index in the page.
    pub idx: u32,
    /// Positions in its heading.
    pub head: Vec<u32>,
    /// Positions in its body.
    pub body: Vec<u32>,
}

/// One search section of an analysed page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionText {
    /// Heading anchor; empty for the text before the first heading.
    pub anchor: String,
    /// Heading text; empty for the text before the first heading.
    pub title: String,
    /// Plain text.
    pub body: String,
    /// The conditions its text lies under (`{% if %}` blocks), outermost first; empty for
    /// text every visitor sees.
    pub guard: Vec<String>,
}

/// A page as the index holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct PageDoc {
    pub page_id: String,
    pub title: String,
    pub description: String,
    pub path: String,
    /// Titles of the ancestors, top-level first.
    pub ancestors: Vec<String>,
    pub sections: Vec<SectionText>,
    /// Ranked words (stop words aside) in the title, in all headings, and in all bodies.
    pub title_len: u32,
    pub head_len: u32,
    pub body_len: u32,
    /// Every indexed term with its hits, in term order.
    pub terms: BTreeMap<String, TermHits>,
    /// Every ranked surface word with its term.
    pub words: BTreeMap<String, String>,
}

/// Whether a page is searchable: document pages not marked `noIndex`.
pub fn indexable(page: &Page) -> bool {
    page.markdown().is_some() && !page.no_index
}

/// Analyses a page: its sections (the description leads the first one) and term statistics.
pub fn page_doc(analyzer: &Analyzer, page: &Page, path: &str, ancestors: Vec<String>) -> PageDoc {
    let markdown = page.markdown().unwrap_or("");
    let mut sections: Vec<SectionText> = quire_content::sections::sections(markdown)
        .into_iter()
        .map(|s| SectionText {
            anchor: s.id,
            title: s.title,
            body: s.body,
            guard: s.guard,
        })
        .collect();
    let description = page.description.clone().unwrap_or_default();
    if !description.trim().is_empty() {
        match sections.first_mut() {
            Some(first) if first.anchor.is_empty() && first.guard.is_empty() => {
                first.body = format!("{description}\n{}", first.body);
            }
            _ => sections.insert(
                0,
                SectionText {
                    anchor: String::new(),
                    title: String::new(),
                    body: description.clone(),
                    guard: Vec::new(),
                },
            ),
        }
    }
    let mut terms: BTreeMap<String, TermHits> = BTreeMap::new();
    let mut all_words: BTreeMap<String, String> = BTreeMap::new();
    let mut title_len = 0;
    for (at, w) in words(&page.title).filter_map(|(at, w)| Some((at, analyzer.word(w)?))) {
        terms.entry(w.term.clone()).or_default().title.push(at);
        if !w.stop {
            title_len += 1;
            all_words.insert(w.surface, w.term);
        }
    }
    let (mut head_len, mut body_len) = (0, 0);
    for (idx, s) in sections.iter().enumerate() {
        let idx = u32::try_from(idx).unwrap_or(u32::MAX);
        for (is_head, text) in [(true, &s.title), (false, &s.body)] {
            for (at, w) in words(text).filter_map(|(at, w)| Some((at, analyzer.word(w)?))) {
                if !w.stop && is_head {
                    head_len += 1;
                } else if !w.stop {
                    body_len += 1;
                }
                let hits = terms.entry(w.term.clone()).or_default();
                if hits.sections.last().is_none_or(|last| last.idx != idx) {
                    hits.sections.push(SectionHits {
                        idx,
                        ..SectionHits::default()
                    });
                }
                let last = hits.sections.last_mut().expect("just pushed");
                if is_head {
                    last.head.push(at);
                } else {
                    last.body.push(at);
                }
                if !w.stop {
                    all_words.insert(w.surface, w.term);
                }
            }
        }
    }
    PageDoc {
        page_id: page.id.clone(),
        title: page.title.clone(),
        description,
        path: path.to_string(),
        ancestors,
        sections,
        title_len,
        head_len,
        body_len,
        terms,
        words: all_words,
    }
}

/// One indexable page of a revision, before analysis.
#[derive(Debug, Clone)]
pub struct PageRef<'a> {
    pub page: &'a Page,
    pub path: String,
    pub ancestors: Vec<String>,
}

/// The indexable pages of a revision, by id.
pub fn indexable_pages(rev: &Revision) -> BTreeMap<String, PageRef<'_>> {
    fn walk<'a>(
        pages: &'a [Page],
        prefix: &str,
        ancestors: &mut Vec<String>,
        out: &mut BTreeMap<String, PageRef<'a>>,
    ) {
        for p in pages {
            let path = if prefix.is_empty() {
                p.slug.clone()
            } else if p.slug.is_empty() {
                prefix.to_string()
            } else {
                format!("{prefix}/{}", p.slug)
            };
            if indexable(p) {
                out.insert(
                    p.id.clone(),
                    PageRef {
                        page: p,
                        path: path.clone(),
                        ancestors: ancestors.clone(),
                    },
                );
            }
            ancestors.push(p.title.clone());
            walk(&p.pages, &path, ancestors, out);
            ancestors.pop();
        }
    }
    let mut out = BTreeMap::new();
    walk(&rev.pages, "", &mut Vec::new(), &mut out);
    out
}

// Stop words: the most frequent function words, sorted for binary search. They are not
// indexed on their own (phrases still match them, on the section text).
const STOP_EN: &[&str] = &[
    "a", "about", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does", "doing",
    "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her",
    "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "it's", "its",
    "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should",
    "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your", "yours",
];
const STOP_FR: &[&str] = &[
    "au", "aux", "avec", "ce", "ces", "dans", "de", "des", "du", "elle", "en", "est", "et", "il",
    "je", "la", "le", "les", "leur", "lui", "ma", "mais", "me", "mes", "mon", "ne", "nous", "on",
    "ou", "par", "pas", "pour", "qu", "que", "qui", "sa", "se", "ses", "son", "sur", "ta", "te",
    "tes", "ton", "tu", "un", "une", "vos", "votre", "vous",
];
const STOP_DE: &[&str] = &[
    "auf", "aus", "bei", "das", "dass", "dem", "den", "der", "des", "die", "ein", "eine", "einem",
    "einen", "einer", "eines", "es", "für", "ich", "im", "in", "ist", "mit", "nach", "nicht",
    "oder", "sich", "sie", "sind", "und", "von", "wie", "wir", "zu", "zum", "zur",
];
const STOP_ES: &[&str] = &[
    "a", "al", "como", "con", "de", "del", "el", "en", "es", "la", "las", "lo", "los", "mas", "no",
    "o", "para", "pero", "por", "que", "se", "si", "su", "sus", "un", "una", "y",
];
const STOP_IT: &[&str] = &[
    "a", "al", "alla", "che", "con", "da", "dei", "del", "della", "di", "e", "gli", "i", "il",
    "in", "la", "le", "lo", "non", "per", "si", "su", "un", "una", "uno",
];
const STOP_PT: &[&str] = &[
    "a", "ao", "as", "com", "da", "das", "de", "do", "dos", "e", "em", "na", "nas", "no", "nos",
    "o", "os", "para", "por", "que", "se", "um", "uma",
];
const STOP_NL: &[&str] = &[
    "dat", "de", "die", "een", "en", "het", "in", "is", "met", "niet", "of", "op", "te", "van",
    "voor", "zijn",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_lists_are_sorted() {
        for list in [
            STOP_EN, STOP_FR, STOP_DE, STOP_ES, STOP_IT, STOP_PT, STOP_NL,
        ] {
            let mut sorted = list.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted, list);
        }
    }

    #[test]
    fn english_stems_and_folds() {
        let a = Analyzer::for_language(None);
        let w = a.word("Configuring").unwrap();
        assert_eq!(
            (w.surface.as_str(), w.term.as_str()),
            ("configuring", "configur")
        );
        assert_eq!(a.word("configuration").unwrap().term, "configur");
        let the = a.word("The").unwrap();
        assert!(the.stop);
        assert_eq!(the.term, "~the");
        assert_eq!(a.word("Café").unwrap().surface, "cafe");
        let fr = Analyzer::for_language(Some("fr"));
        assert_eq!(fr.word("éléphants").unwrap().term, "eleph");
        assert_eq!(fr.word("Éléphant").unwrap().term, "eleph");
        assert_eq!(Analyzer::for_language(Some("ja")).key(), "none/2");
    }

    #[test]
    fn words_split_underscores_too() {
        let w: Vec<(u32, &str)> = words("call snake_case now").collect();
        assert_eq!(
            w,
            vec![
                (0, "call"),
                (1, "snake_case"),
                (1, "snake"),
                (1, "case"),
                (2, "now")
            ]
        );
    }
}
