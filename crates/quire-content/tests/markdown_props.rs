//! Property tests: markdown → document → markdown is a projection (a second round trip
//! changes nothing), for random text and for random GitBook-flavoured structures.

use proptest::prelude::*;
use quire_content::markdown::{document_to_markdown, markdown_to_document, normalize_markdown};

fn check(md: &str) -> Result<(), TestCaseError> {
    let once = normalize_markdown(md);
    let twice = normalize_markdown(&once);
    prop_assert_eq!(&once, &twice, "input {:?}", md);
    // The document of the normalised form is the document of the input.
    prop_assert_eq!(markdown_to_document(&once), markdown_to_document(&twice));
    // The document has no soft breaks (hand-wrapped lines are joined): its markdown is
    // canonical too.
    let joined = document_to_markdown(&markdown_to_document(&once));
    prop_assert_eq!(normalize_markdown(&joined), joined.clone());
    if once.trim_end().lines().count() <= 1 {
        prop_assert_eq!(joined, once);
    }
    Ok(())
}

fn inline() -> impl Strategy<Value = String> {
    "[a-c \n\t0-9&*_`~#<>!&|{}%=+.()\"':/é\\[\\]\\\\-]{0,16}"
}

fn block() -> impl Strategy<Value = String> {
    let t = inline;
    prop_oneof![
        t(),
        t().prop_map(|a| format!("# {a}")),
        t().prop_map(|a| format!("### {a}")),
        (t(), t()).prop_map(|(a, b)| format!("- {a}\n- {b}")),
        (t(), t()).prop_map(|(a, b)| format!("1. {a}\n   - {b}")),
        (t(), t()).prop_map(|(a, b)| format!("- [ ] {a}\n- [x] {b}")),
        t().prop_map(|a| format!("> {a}")),
        (t(), t()).prop_map(|(a, b)| format!("```js title=\"{a}\"\n{b}\n```")),
        t().prop_map(|a| format!("{{% hint style=\"danger\" %}}\n{a}\n{{% endhint %}}")),
        (t(), t(), t()).prop_map(|(a, b, c)| format!("| {a} | {b} |\n| --- | :-: |\n| {c} | x |")),
        (t(), t())
            .prop_map(|(a, b)| format!("<details>\n<summary>{a}</summary>\n\n{b}\n</details>")),
        (t(), t()).prop_map(|(a, b)| format!(
            "{{% tabs %}}\n{{% tab title=\"{a}\" %}}\n{b}\n{{% endtab %}}\n{{% endtabs %}}"
        )),
        (t(), t()).prop_map(|(a, b)| format!("[{a}](https://x.y/{b})")),
        t().prop_map(|a| format!("![{a}](/files/f1)")),
        t().prop_map(|a| format!("**{a}** *{a}* `{a}`")),
        Just("***".to_string()),
        Just("{% embed url=\"https://example.com\" %}".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_text_round_trips(md in "[a-c \n\t\"'/:<é*_`~#>!&|{}%=+.1()\\[\\]\\\\-]{0,60}") {
        check(&md)?;
    }

    #[test]
    fn hand_wrapped_paragraphs_keep_their_lines(
        lines in prop::collection::vec("[a-z]([a-z ,.]{0,20}[a-z.])?", 1..5),
        container in 0..5usize,
    ) {
        let (first, rest) = [("", ""), ("* ", "  "), ("1. ", "   "), ("> ", "> "), ("", "")][container];
        let mut md = String::new();
        for (i, l) in lines.iter().enumerate() {
            md.push_str(if i == 0 { first } else { rest });
            md.push_str(l);
            md.push('\n');
        }
        if container == 4 {
            md = format!("{{% hint style=\"info\" %}}\n{md}{{% endhint %}}\n");
        }
        prop_assert_eq!(normalize_markdown(&md), md.clone());
        check(&md)?;
    }

    /// Line ends between pieces that start blocks, marks, breaks and spaces: keeping soft
    /// breaks neither makes normalising unstable nor changes the document where reading
    /// them as spaces did not.
    #[test]
    fn line_ends_change_no_document(pieces in prop::collection::vec(prop_oneof![
        Just("a"), Just(" "), Just("\t"), Just("&#x20;"), Just("&#9;"), Just("*"), Just("_"),
        Just("**"), Just("`"), Just("#"), Just(">"), Just("-"), Just("1."), Just("="),
        Just("\\"), Just("<br>"), Just("<b>"), Just("</b>"), Just("<kbd>"), Just("</kbd>"),
        Just("["), Just("](x)"), Just("![i](y)"), Just("{%"), Just("|"), Just("\n"),
        Just("\n"), Just("\n"), Just("\n  "), Just("\n> "), Just("\n* "), Just("  \n"),
    ], 0..20)) {
        let md = pieces.concat();
        let joined = |m: &str| document_to_markdown(&markdown_to_document(m));
        let once = normalize_markdown(&md);
        if joined(&md) == joined(&joined(&md)) {
            prop_assert_eq!(normalize_markdown(&once), once.clone(), "input {:?}", md);
        }
        if markdown_to_document(&md) == markdown_to_document(&joined(&md)) {
            prop_assert_eq!(markdown_to_document(&md), markdown_to_document(&once), "input {:?}", md);
        }
    }

    #[test]
    fn random_structures_round_trip(
        blocks in prop::collection::vec(block(), 0..6),
        seps in prop::collection::vec(prop_oneof![Just("\n"), Just("\n\n")], 6),
    ) {
        let mut md = String::new();
        for (i, b) in blocks.iter().enumerate() {
            if i > 0 {
                md.push_str(seps[i]);
            }
            md.push_str(b);
        }
        check(&md)?;
    }
}

/// A case the structures test found: a `</details>` line followed by a fence holding a
/// whitespace-only line. CommonMark reads `</details>` as the start of an HTML block that
/// the blank-looking line ends, so the closing fence opened a code block to the end of the
/// text, and the expandable after it was read as raw HTML until a second round trip.
#[test]
fn an_expandable_after_a_code_block_with_a_blank_line_stays_an_expandable() {
    let details = "<details>\n<summary></summary>\n\n\n</details>";
    for fence in ["```js title=\"\"\n\t\n```", "```js\n \n```"] {
        let md = format!("{details}\n{fence}\n{details}");
        check(&md).unwrap();
        let doc = serde_json::to_value(markdown_to_document(&md)).unwrap();
        let kinds: Vec<&str> = doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(kinds, ["expandable", "code", "expandable"], "{md:?}");
    }
}

/// A case the structures test found: a list holding unknown inline HTML is kept as its
/// source text, here indented by three spaces; written after an ordered list whose item's
/// content starts at column 3, it became a child of that item on the next read.
#[test]
fn indented_source_text_after_a_list_stays_after_it() {
    let md = "1. \t!\n   - \n- [ ] \n- [x] <a0>";
    check(md).unwrap();
    let doc = serde_json::to_value(markdown_to_document(&normalize_markdown(md))).unwrap();
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 2, "{doc}");
}

/// A case the structures test found: two lists with different markers parted only by blank
/// lines (kept as an empty paragraph) were written with one marker, and so read back as
/// one list.
#[test]
fn lists_parted_by_blank_lines_stay_two_lists() {
    let md = "| \n* |  |\n| --- | :-: |\n|  | x |\n\n\n\n- \n- ";
    check(md).unwrap();
    let doc = serde_json::to_value(markdown_to_document(&normalize_markdown(md))).unwrap();
    let lists = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["type"] == "list-unordered")
        .count();
    assert_eq!(lists, 2, "{doc}");
}

/// A case the structures test found: a tab-indented `=` under a task item makes the item's
/// text a setext heading with the task marker inside it. No GitBook block is a checkable
/// heading, so the list is kept as its source; it was read as an empty heading, with the
/// next item cut off into raw text that became a list on the next read.
#[test]
fn a_task_item_underlined_as_a_heading_is_kept_as_written() {
    let md = "- [ ] é\n\t=\n- [x] _";
    check(md).unwrap();
    assert_eq!(normalize_markdown(md), format!("{md}\n"));
}

/// A case the structures test found: an image's text holding a line break (here a
/// backslash then trailing tabs) was written as `<br>` after the backslash, which read back
/// as the literal text `<br>`. An image's text is one line: a break in it is a space.
#[test]
fn a_line_break_in_an_image_text_is_a_space() {
    let md = "\n- \n- 0{\n![\\\t\t\n](/files/f1)\n";
    check(md).unwrap();
    assert!(
        normalize_markdown(md).contains("![\\ ](/files/f1)"),
        "{}",
        normalize_markdown(md)
    );
}

/// A case the structures test found: an image whose text is `|`, in a table cell, was
/// written with the `|` bare, which ended the cell on the next read.
#[test]
fn a_bar_in_an_image_text_inside_a_table_cell_stays_in_the_cell() {
    let md = "\n|  |  |\n| --- | :-: |\n|  | x |\n![\\|](/files/f1)";
    check(md).unwrap();
    assert!(
        normalize_markdown(md).contains("![\\|](/files/f1)"),
        "{}",
        normalize_markdown(md)
    );
}
