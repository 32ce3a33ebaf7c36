//! A line diff of two markdown texts as HTML, words highlighted within changed lines.

use std::time::Duration;

use similar::{Algorithm, ChangeTag, TextDiff};

use super::escape_text;

/// Lines of unchanged context kept around each change.
const CONTEXT: usize = 3;
/// Longest a diff may take; past it, the diff is coarser (whole blocks of lines).
const DEADLINE: Duration = Duration::from_millis(200);

/// `before` against `after`, as an HTML table body of lines: removed lines (`del`), added
/// lines (`ins`), the changed words within them in `<mark>`, and a little unchanged context
/// between (`…` where lines are skipped). Everything is escaped.
pub fn markdown_diff(before: &str, after: &str) -> String {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(DEADLINE)
        .diff_lines(before, after);
    let mut out = String::new();
    for (i, group) in diff.grouped_ops(CONTEXT).iter().enumerate() {
        if i > 0 {
            out.push_str("<tr class=\"gap\"><td></td><td></td><td>…</td></tr>");
        }
        for op in group {
            for change in diff.iter_inline_changes(op) {
                // The sign is drawn; screen readers hear the word instead (class `sr`).
                let (class, sign, said) = match change.tag() {
                    ChangeTag::Delete => ("del", "-", "<span class=\"sr\">Removed: </span>"),
                    ChangeTag::Insert => ("ins", "+", "<span class=\"sr\">Added: </span>"),
                    ChangeTag::Equal => ("same", " ", ""),
                };
                let old = change.old_index().map(|n| (n + 1).to_string());
                let new = change.new_index().map(|n| (n + 1).to_string());
                out.push_str(&format!(
                    "<tr class=\"{class}\"><td class=\"n\">{}</td><td class=\"n\">{}</td><td><span class=\"sign\" aria-hidden=\"true\">{sign}</span>{said}",
                    old.unwrap_or_default(),
                    new.unwrap_or_default()
                ));
                for (emphasized, text) in change.iter_strings_lossy() {
                    let text = escape_text(text.trim_end_matches('\n'));
                    if emphasized && change.tag() != ChangeTag::Equal {
                        out.push_str(&format!("<mark>{text}</mark>"));
                    } else {
                        out.push_str(&text);
                    }
                }
                out.push_str("</td></tr>");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::markdown_diff;

    #[test]
    fn changed_words_are_marked_within_changed_lines_and_everything_is_escaped() {
        let html = markdown_diff("one\ntwo <b>\nthree\n", "one\ntwo <i>\nthree\nfour\n");
        assert!(html.contains("<tr class=\"del\">"), "{html}");
        assert!(html.contains("<tr class=\"ins\">"), "{html}");
        assert!(
            html.contains("<mark>&lt;i&gt;</mark>") || html.contains("<mark>i</mark>"),
            "{html}"
        );
        assert!(!html.contains("<b>") && !html.contains("<i>"), "{html}");
        assert!(
            html.contains(">four</td>") || html.contains("four"),
            "{html}"
        );
        assert_eq!(markdown_diff("same\n", "same\n"), "");
    }
}
