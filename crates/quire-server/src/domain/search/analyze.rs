//! Text analysis shared by indexing and querying: Unicode word boundaries, CJK bigrams,
//! lower case, stop words and Snowball stems per language, and diacritic folding.
//!
//! A word has two forms in the index: its *surface* (lower case, folded), kept in the word
//! dictionary for prefix and typo look-ups, and its *term* (the folded stem), which the
//! postings are keyed by. The same functions analyse documents and queries, so both
//! always agree.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use quire_content::model::{Page, Revision};
use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Bumped whenever analysis changes in a way that changes terms: an index built by another
/// version is rebuilt on its next use (3: CJK bigrams; 4: code samples counted apart).
pub const VERSION: u32 = 4;

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
    /// Languages without a Snowball stemmer are indexed by their unstemmed words: Japanese,
    /// Chinese (`zh`, `yue`) and Korean among them, whose CJK text is indexed as bigrams in
    /// every language (see [`tokens`]) and whose Latin words are only lower-cased and folded.
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

    /// Analyses one word as produced by [`tokens`]; `None` for words that are not indexed.
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
        // CJK bigrams (see [`tokens`]) are their own terms: no stemmer knows them.
        if lower.starts_with(is_cjk) {
            return Some(Word {
                term: surface.clone(),
                surface,
                stop: false,
            });
        }
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

/// One word of a text as indexed: see [`tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    /// Its position: the index of the word (or CJK bigram) in the text.
    pub at: u32,
    /// Its first byte in the text.
    pub start: usize,
    pub text: &'a str,
    /// A part of a `snake_case` word, at the word's position (after the whole word).
    pub part: bool,
    /// The piece of text it comes from (counted from zero): a word, or a run of CJK
    /// characters, whose bigrams share one piece.
    pub piece: u32,
}

/// The words of `text` with their positions. Words are found by Unicode word boundaries;
/// words joined by underscores (`snake_case`) also yield their parts, at the same position.
pub fn words(text: &str) -> impl Iterator<Item = (u32, &str)> {
    tokens(text).into_iter().map(|t| (t.at, t.text))
}

/// The words of `text`, as indexed and as queried (one function for both, so that they
/// always agree).
///
/// A run of CJK characters (Han, kana, Hangul, Bopomofo: see [`is_cjk`]), with nothing
/// between them, yields its overlapping bigrams, at consecutive positions (a run of one
/// character yields that character): Chinese and Japanese do not separate their words, and
/// Unicode word boundaries cut Han and hiragana into single characters (katakana into runs
/// of katakana), so `設定` would match every text holding `設` and `定` anywhere.
/// Bigrams need no dictionary and find a word at any place in a text; a query's run is
/// looked up as its bigrams at consecutive positions (see `query::parse`).
///
/// This holds for every language, not only for spaces set to Japanese, Chinese or Korean:
/// a space whose language is unset is analysed as English, English documentation quotes
/// Japanese or Chinese names, and an organization's search runs one query over spaces of
/// several languages. No stemmer or stop list has CJK words, so bigrams change nothing else.
/// Other words are left as they are (Latin words next to CJK text, `API設定`, are words of
/// their own).
pub fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Tokens {
        text,
        out: Vec::new(),
        at: 0,
        piece: 0,
        run: Vec::new(),
        run_end: 0,
    };
    for (start, w) in text.unicode_word_indices() {
        if w.is_ascii() || !w.chars().any(is_cjk) {
            out.flush();
            out.word(start, w);
            continue;
        }
        // A word holding CJK characters: Hangul joins Latin letters (`Quire설정`), kana
        // joins underscores. Its CJK characters (with the marks that follow them) continue
        // the run before when nothing lies between; the rest are words of their own.
        if start != out.run_end {
            out.flush();
        }
        let mut other: Option<usize> = None;
        for (i, g) in w.grapheme_indices(true) {
            let at = start + i;
            if g.chars().next().is_some_and(is_cjk) {
                if let Some(from) = other.take() {
                    out.word(from, &text[from..at]);
                }
                out.run.push(at);
                out.run_end = at + g.len();
            } else if other.is_none() {
                out.flush();
                other = Some(at);
            }
        }
        if let Some(from) = other {
            out.word(from, &text[from..start + w.len()]);
        }
    }
    out.flush();
    out.out
}

/// The state of [`tokens`].
struct Tokens<'a> {
    text: &'a str,
    out: Vec<Token<'a>>,
    /// The next position, and the next piece.
    at: u32,
    piece: u32,
    /// The pending CJK run: where each of its characters starts, and where it ends.
    run: Vec<usize>,
    run_end: usize,
}

impl<'a> Tokens<'a> {
    fn push(&mut self, start: usize, end: usize, part: bool) {
        self.out.push(Token {
            at: self.at,
            start,
            text: &self.text[start..end],
            part,
            piece: self.piece,
        });
    }

    /// A word that is not CJK, with its `snake_case` parts.
    fn word(&mut self, start: usize, w: &'a str) {
        // Underscores alone, between CJK characters, are no word.
        if !w.chars().any(char::is_alphanumeric) {
            return;
        }
        self.push(start, start + w.len(), false);
        if w.contains('_') {
            let mut from = start;
            for p in w.split('_') {
                if !p.is_empty() {
                    self.push(from, from + p.len(), true);
                }
                from += p.len() + 1;
            }
        }
        self.at = self.at.saturating_add(1);
        self.piece = self.piece.saturating_add(1);
    }

    /// Ends the pending CJK run: its bigrams, or its one character.
    fn flush(&mut self) {
        let n = self.run.len();
        if n == 0 {
            return;
        }
        for i in 0..n.saturating_sub(1).max(1) {
            let end = self.run.get(i + 2).copied().unwrap_or(self.run_end);
            self.push(self.run[i], end, false);
            self.at = self.at.saturating_add(1);
        }
        self.run.clear();
        self.piece = self.piece.saturating_add(1);
    }
}

/// Whether `c` is a CJK character that [`tokens`] joins into bigrams: Han ideographs (with
/// `々` and `〆`), hiragana, katakana (full and half width, with `ー`), Hangul and Bopomofo.
/// Punctuation (`。`, `、`, `・`) and full-width Latin letters and digits are not.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF // Hangul Jamo
        | 0x2E80..=0x2FDF // CJK and Kangxi radicals
        | 0x3005..=0x3007 // 々 〆 〇
        | 0x3021..=0x3029 // Hangzhou numerals
        | 0x3031..=0x3035 // kana repeat marks
        | 0x303B..=0x303C // 〻 〼
        | 0x3041..=0x309F // hiragana
        | 0x30A1..=0x30FA // katakana
        | 0x30FC..=0x30FF // ー ヽ ヾ ヿ
        | 0x3105..=0x312F // Bopomofo
        | 0x3131..=0x318E // Hangul compatibility jamo
        | 0x31A0..=0x31BF // Bopomofo extended
        | 0x31F0..=0x31FF // katakana phonetic extensions
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xA960..=0xA97F // Hangul Jamo extended A
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xD7B0..=0xD7FF // Hangul Jamo extended B
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0xFF66..=0xFF9F // half-width katakana
        | 0xFFA0..=0xFFDC // half-width Hangul
        | 0x1AFF0..=0x1B16F // kana supplement and extensions
        | 0x20000..=0x323AF // CJK extensions B to H, compatibility supplement
    )
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
    /// How many of `body` are in code samples.
    pub code: u32,
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
    /// The byte ranges of `body` that are code samples, in order.
    pub code: Vec<Range<usize>>,
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
            code: s.code,
        })
        .collect();
    let description = page.description.clone().unwrap_or_default();
    if !description.trim().is_empty() {
        match sections.first_mut() {
            Some(first) if first.anchor.is_empty() && first.guard.is_empty() => {
                first.body = format!("{description}\n{}", first.body);
                let shift = description.len() + 1;
                for r in &mut first.code {
                    *r = r.start + shift..r.end + shift;
                }
            }
            _ => sections.insert(
                0,
                SectionText {
                    anchor: String::new(),
                    title: String::new(),
                    body: description.clone(),
                    guard: Vec::new(),
                    code: Vec::new(),
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
            // The code ranges not yet passed (in order, as tokens are).
            let mut code = if is_head { &[][..] } else { &s.code[..] };
            for t in tokens(text) {
                let Some(w) = analyzer.word(t.text) else {
                    continue;
                };
                let at = t.at;
                while code.first().is_some_and(|r| r.end <= t.start) {
                    code = &code[1..];
                }
                let in_code = code.first().is_some_and(|r| r.start <= t.start);
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
                    last.code += u32::from(in_code);
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

/// A page of a revision's tree and its parent's id: what comparing two revisions' trees
/// needs, without building every page's path and ancestors.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub page: &'a Page,
    pub parent: Option<&'a str>,
}

/// A revision's pages by id, and their ids parents first (navigation order).
pub struct Tree<'a> {
    /// Hashed with foldhash (randomly seeded): built over every page on each index update.
    pub nodes: HashMap<&'a str, Node<'a>, foldhash::fast::RandomState>,
    pub order: Vec<&'a str>,
}

impl<'a> Tree<'a> {
    /// The pages of `rev`.
    pub fn of(rev: &'a Revision) -> Tree<'a> {
        let mut nodes = HashMap::with_hasher(foldhash::fast::RandomState::default());
        let mut order = Vec::new();
        let mut stack: Vec<(&Page, Option<&str>)> =
            rev.pages.iter().rev().map(|p| (p, None)).collect();
        while let Some((page, parent)) = stack.pop() {
            nodes.insert(page.id.as_str(), Node { page, parent });
            order.push(page.id.as_str());
            stack.extend(page.pages.iter().rev().map(|c| (c, Some(page.id.as_str()))));
        }
        Tree { nodes, order }
    }

    /// The page `id` with its path (its own and its ancestors' slugs, the empty ones left
    /// out, joined by `/`) and its ancestors' titles, top-level first; `None` for an id not
    /// in the tree.
    pub fn page_ref(&self, id: &str) -> Option<PageRef<'a>> {
        let node = self.nodes.get(id)?;
        let mut chain = vec![node.page];
        let mut up = node.parent;
        while let Some(parent) = up.and_then(|p| self.nodes.get(p)) {
            chain.push(parent.page);
            up = parent.parent;
        }
        chain.reverse();
        let path = chain
            .iter()
            .map(|p| p.slug.as_str())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("/");
        let ancestors = chain[..chain.len() - 1]
            .iter()
            .map(|p| p.title.clone())
            .collect();
        Some(PageRef {
            page: node.page,
            path,
            ancestors,
        })
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
    let tree = Tree::of(rev);
    tree.order
        .iter()
        .filter(|id| indexable(tree.nodes[*id].page))
        .filter_map(|id| Some((id.to_string(), tree.page_ref(id)?)))
        .collect()
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
    fn indexable_pages_have_paths_and_ancestors() {
        let mut group = Page::group("g", "Guides", "guides");
        let mut intro = Page::document("i", "Intro", "", "Hello.\n");
        intro
            .pages
            .push(Page::document("d", "Deep", "deep", "Deep.\n"));
        group.pages.push(intro);
        group
            .pages
            .push(Page::document("s", "Setup", "setup", "Set up.\n"));
        let rev = Revision {
            pages: vec![Page::document("r", "Home", "home", "Home.\n"), group],
            ..Revision::default()
        };
        let tree = Tree::of(&rev);
        assert_eq!(tree.order, vec!["r", "g", "i", "d", "s"]);
        let listed = indexable_pages(&rev);
        let got: Vec<(&str, &str, Vec<&str>)> = listed
            .iter()
            .map(|(id, r)| {
                let ancestors = r.ancestors.iter().map(String::as_str).collect();
                (id.as_str(), r.path.as_str(), ancestors)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("d", "guides/deep", vec!["Guides", "Intro"]),
                ("i", "guides", vec!["Guides"]),
                ("r", "home", vec![]),
                ("s", "guides/setup", vec!["Guides"]),
            ]
        );
        assert!(tree.page_ref("nowhere").is_none());
    }

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
        assert_eq!(
            Analyzer::for_language(Some("ja")).key(),
            format!("none/{VERSION}")
        );
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

    #[test]
    fn cjk_runs_become_bigrams() {
        let text = "API設定を変更する。Quire の検索ページ snake_case 한국어 검색 私";
        let got: Vec<(u32, &str)> = words(text).collect();
        assert_eq!(
            got,
            vec![
                (0, "API"),
                (1, "設定"),
                (2, "定を"),
                (3, "を変"),
                (4, "変更"),
                (5, "更す"),
                (6, "する"),
                (7, "Quire"),
                (8, "の検"),
                (9, "検索"),
                (10, "索ペ"),
                (11, "ペー"),
                (12, "ージ"),
                (13, "snake_case"),
                (13, "snake"),
                (13, "case"),
                (14, "한국"),
                (15, "국어"),
                (16, "검색"),
                (17, "私"),
            ]
        );
        // Tokens carry their byte ranges, and the piece (word or run) they come from.
        let t = tokens(text);
        assert!(t
            .iter()
            .all(|t| &text[t.start..t.start + t.text.len()] == t.text));
        let pieces: Vec<u32> = t.iter().filter(|t| !t.part).map(|t| t.piece).collect();
        assert_eq!(
            pieces,
            [0, 1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 4, 5, 5, 6, 7]
        );
        // Hangul joined to Latin letters, kana joined to an underscore: split by script.
        let got: Vec<(u32, &str)> = words("Quire설정 データ_id").collect();
        assert_eq!(
            got,
            vec![
                (0, "Quire"),
                (1, "설정"),
                (2, "デー"),
                (3, "ータ"),
                (4, "_id"),
                (4, "id")
            ]
        );
        // Punctuation and spaces end a run.
        let got: Vec<(u32, &str)> = words("検索、設定・公開 する").collect();
        assert_eq!(
            got,
            vec![(0, "検索"), (1, "設定"), (2, "公開"), (3, "する")]
        );
        // A bigram is its own term, in every language: no stem, no stop word.
        for language in [None, Some("ja"), Some("zh"), Some("fr")] {
            let w = Analyzer::for_language(language).word("設定").unwrap();
            assert_eq!(
                (w.surface.as_str(), w.term.as_str(), w.stop),
                ("設定", "設定", false)
            );
        }
        assert!(is_cjk('々') && is_cjk('ー') && is_cjk('ｶ') && is_cjk('𠮷'));
        assert!(!is_cjk('。') && !is_cjk('・') && !is_cjk('Ａ') && !is_cjk('a'));
    }
}
