//! Unit tests of the markdown dialect: each form Git Sync writes comes back unchanged.

use super::*;

fn roundtrip(md: &str) -> String {
    let once = normalize_markdown(md);
    let twice = normalize_markdown(&once);
    assert_eq!(once, twice, "not stable for {md:?}");
    once
}

fn json(md: &str) -> Value {
    serde_json::to_value(markdown_to_document(md)).unwrap()
}

#[test]
fn basic_blocks() {
    let md = "## Title\n\nSome **bold** and _italic_ and `code` and ~~gone~~.\n\n### Sub <a href=\"#custom\" id=\"custom\"></a>\n\n* a\n* b\n  * nested\n\n1. one\n2. two\n\n* [ ] todo\n* [x] done\n\n> quoted\n\n***\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    assert_eq!(v["nodes"][0]["type"], "heading-1");
    assert_eq!(v["nodes"][2]["type"], "heading-2");
    assert_eq!(v["nodes"][2]["data"]["id"], "custom");
    assert_eq!(
        v["nodes"][1]["nodes"][0]["leaves"][1]["marks"][0]["type"],
        "bold"
    );
    assert_eq!(v["nodes"][3]["type"], "list-unordered");
    assert_eq!(v["nodes"][4]["type"], "list-ordered");
    assert_eq!(v["nodes"][5]["type"], "list-tasks");
    assert_eq!(v["nodes"][5]["nodes"][1]["data"]["checked"], true);
    assert_eq!(v["nodes"][6]["type"], "blockquote");
    assert_eq!(v["nodes"][7]["type"], "divider");
    assert_eq!(v["nodes"][7]["isVoid"], true);
    // Other forms are normalised to Git Sync's.
    assert_eq!(
        roundtrip("# T {#x}\n\n- a\n\n*i*\n\n---\n"),
        "## T <a href=\"#x\" id=\"x\"></a>\n\n* a\n\n_i_\n\n***\n"
    );
}

#[test]
fn code_blocks() {
    let md = "```js\nconst a = 1;\n\nconsole.log(a);\n```\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    assert_eq!(v["nodes"][0]["data"]["syntax"], "js");
    assert_eq!(v["nodes"][0]["nodes"].as_array().unwrap().len(), 3);
    assert_eq!(v["nodes"][0]["nodes"][0]["type"], "code-line");
    let wrapped = "{% code title=\"x.py\" overflow=\"wrap\" lineNumbers=\"true\" %}\n```python\nprint(1)\n```\n{% endcode %}\n";
    assert_eq!(roundtrip(wrapped), wrapped);
    let v = json(wrapped);
    assert_eq!(v["nodes"][0]["data"]["title"], "x.py");
    assert_eq!(v["nodes"][0]["data"]["lineNumbers"], true);
    // The attributes Quire once wrote in the info string.
    assert_eq!(
        roundtrip("```python title=\"x.py\"\nprint(1)\n```\n"),
        "{% code title=\"x.py\" %}\n```python\nprint(1)\n```\n{% endcode %}\n"
    );
    // Fences inside code are lengthened.
    let nested = "````md\n```\ninner\n```\n````\n";
    assert_eq!(roundtrip(nested), nested);
}

#[test]
fn containers() {
    let md = "{% hint style=\"warning\" %}\nCareful **now**.\n{% endhint %}\n\n{% tabs %}\n{% tab title=\"First\" %}\nOne\n{% endtab %}\n\n{% tab title=\"Second\" icon=\"apple\" %}\n```sh\nls\n```\n{% endtab %}\n{% endtabs %}\n\n<details>\n\n<summary>More <em>info</em></summary>\n\nHidden text.\n\n</details>\n\n{% embed url=\"https://www.youtube.com/watch?v=x\" %}\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    assert_eq!(v["nodes"][0]["type"], "hint");
    assert_eq!(v["nodes"][0]["data"]["style"], "warning");
    assert_eq!(v["nodes"][1]["type"], "tabs");
    assert_eq!(v["nodes"][1]["nodes"][1]["data"]["title"], "Second");
    assert_eq!(v["nodes"][1]["nodes"][1]["data"]["icon"], "apple");
    assert_eq!(v["nodes"][1]["nodes"][1]["nodes"][0]["type"], "code");
    assert_eq!(v["nodes"][2]["type"], "expandable");
    assert_eq!(
        v["nodes"][2]["fragments"][0]["fragment"],
        "expandable-title"
    );
    assert_eq!(v["nodes"][3]["type"], "embed");
    // Tags inside fenced code are code.
    let code = "```\n{% hint style=\"info\" %}\n```\n";
    assert_eq!(json(code)["nodes"][0]["type"], "code");
}

#[test]
fn unknown_content_is_kept_verbatim() {
    for md in [
        "{% unknown thing %}\n",
        "{% hint style=\"info\" color=\"red\" %}\nText\n{% endhint %}\n",
        "<div class=\"x\">\n<p>hi</p>\n</div>\n",
        "Some <span>inline</span> html.\n",
        "<!-- a comment -->\n",
        "{% endhint %}\n",
    ] {
        assert_eq!(roundtrip(md), md);
        let v = json(md);
        assert_eq!(v["nodes"][0]["meta"]["raw"], true, "{md}");
    }
}

#[test]
fn tables() {
    let md = "| Name  | Value |\n| ----- | ----: |\n| **a** | 1     |\n| b \\| c |       |\n";
    let out = roundtrip(md);
    let v = json(md);
    let t = &v["nodes"][0];
    assert_eq!(t["type"], "table");
    assert_eq!(t["isVoid"], true);
    assert_eq!(t["data"]["view"]["type"], "grid");
    assert_eq!(t["data"]["definition"]["c1"]["textAlignment"], "right");
    assert_eq!(t["data"]["definition"]["c0"]["title"], "Name");
    assert_eq!(t["data"]["records"]["r1"]["values"]["c0"], "r1-c0");
    assert!(t["data"]["records"]["r1"]["values"].get("c1").is_none());
    assert_eq!(
        out,
        "| Name   | Value |\n| ------ | ----: |\n| **a**  | 1     |\n| b \\| c |       |\n"
    );
}

#[test]
fn links_images_and_files() {
    let md = "See [the page](/pages/abc123), [anchor](/pages/abc123#setup), [site](https://example.com), [here](#top) and [abc123](/pages/abc123 \"mention\").\n\n<figure><img src=\"/files/f1\" alt=\"\"><figcaption><p>Diagram</p></figcaption></figure>\n\nInline ![icon](https://x.y/i.png) image.\n\n{% file src=\"/files/f2\" %}\n\n{% content-ref url=\"/pages/p2\" %}\n[p2](/pages/p2)\n{% endcontent-ref %}\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    let p = &v["nodes"][0]["nodes"];
    assert_eq!(p[1]["type"], "link");
    assert_eq!(
        p[1]["data"]["ref"],
        serde_json::json!({"kind": "page", "page": "abc123"})
    );
    assert_eq!(p[3]["data"]["ref"]["kind"], "anchor");
    assert_eq!(p[5]["data"]["ref"]["kind"], "url");
    assert_eq!(p[9]["type"], "mention");
    assert_eq!(v["nodes"][1]["type"], "images");
    assert_eq!(v["nodes"][1]["nodes"][0]["data"]["ref"]["kind"], "file");
    assert_eq!(v["nodes"][2]["nodes"][1]["type"], "inline-image");
    assert_eq!(v["nodes"][3]["type"], "file");
    assert_eq!(v["nodes"][4]["type"], "content-ref");
}

#[test]
fn resolver_can_drop_links() {
    struct Drop;
    impl LinkResolver for Drop {
        fn resolve(&self, href: &str) -> Option<LinkTarget> {
            (href == "missing.md").then_some(LinkTarget::Text)
        }
    }
    let out = normalize_markdown_with("A [broken](missing.md) link.\n", &Drop);
    assert_eq!(out, "A broken link.\n");
}

#[test]
fn tricky_inline_content_is_stable() {
    for md in [
        "**a **b",
        "*a*b*c*",
        "x<strong>a </strong>y",
        "1. not a list",
        "\\# not a heading",
        "a  \nb",
        "a\\\nb",
        "`` a`b ``",
        "***both***",
        "**bold *and italic* inside**",
        "<kbd>Ctrl</kbd> + <kbd>C</kbd>",
        "<mark style=\"color:red;\">red</mark>",
        "[**bold link**](https://x.y)",
        "{% hint %} in text",
        "&copy; &amp; entities",
        "trailing backslash \\",
        "- [ ]",
        "-",
        "> a\n\n> b",
        "- a\n\n\n- b",
        "* a\n- b",
        "Setext\n===",
        "| a |\n| - |\n| `x|y` |",
        "costs $5 and $10",
        "text\n\n\n\nafter blank lines",
    ] {
        roundtrip(md);
    }
}

#[test]
fn empty_and_whitespace() {
    assert_eq!(normalize_markdown(""), "");
    assert_eq!(normalize_markdown("\n\n  \n"), "");
    assert_eq!(markdown_to_document("").nodes.len(), 0);
}

#[test]
fn annotations_are_footnotes() {
    let md = "A word[^1] and _another_[^2] here.\n\n[^1]: The first note.\n\n[^2]: A second one.\n\n    With two paragraphs.\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    let p = &v["nodes"][0]["nodes"];
    assert_eq!(p[1]["type"], "annotation");
    assert_eq!(p[1]["nodes"][0]["leaves"][0]["text"], "word");
    assert_eq!(p[1]["fragments"][0]["fragment"], "annotation-body");
    assert_eq!(p[3]["fragments"][0]["nodes"].as_array().unwrap().len(), 2);
    // Labels are renumbered in order; a reference without definition is text.
    assert_eq!(
        roundtrip("See this[^note].\n\n[^note]: Here.\n"),
        "See this[^1].\n\n[^1]: Here.\n"
    );
    assert_eq!(
        markdown_to_document("Missing[^x] note.\n").plain_text(),
        "Missing[^x] note."
    );
}

#[test]
fn node_line_finds_the_block_of_a_key() {
    let md = "## Title\n\nFirst paragraph.\n\n{% hint style=\"info\" %}\nInside the hint.\n{% endhint %}\n\n* one\n* two\n";
    let mut doc = markdown_to_document(md);
    doc.assign_keys("page-1");
    assert_eq!(
        document_to_markdown(&doc),
        md,
        "the text is the dialect's own"
    );
    let key = |n: &Node| n.element().unwrap().key.clone().unwrap();
    let hint = &doc.nodes[2];
    let inner = key(&hint.element().unwrap().children()[0]);
    assert_eq!(node_line(md, "page-1", &key(&doc.nodes[0])), Some(1));
    assert_eq!(node_line(md, "page-1", &key(&doc.nodes[1])), Some(3));
    assert_eq!(node_line(md, "page-1", &key(hint)), Some(5));
    assert_eq!(
        node_line(md, "page-1", &inner),
        Some(5),
        "a node inside a block"
    );
    assert_eq!(node_line(md, "page-1", &key(&doc.nodes[3])), Some(9));
    assert_eq!(node_line(md, "page-1", "nope"), None);
    // Keys depend on the seed: another page's keys are not this one's.
    assert_eq!(node_line(md, "page-2", &key(hint)), None);
}

#[test]
fn node_line_needs_the_dialects_own_text() {
    let md = "# Title\n\nFirst paragraph.\n";
    let mut doc = markdown_to_document(md);
    doc.assign_keys("page-1");
    let key = doc.nodes[1].element().unwrap().key.clone().unwrap();
    assert_eq!(node_line(md, "page-1", &key), None);
}

/// Every text leaf of a JSON document.
fn leaf_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(t)) = o.get("text") {
                out.push(t.clone());
            }
            o.values().for_each(|c| leaf_texts(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| leaf_texts(c, out)),
        _ => {}
    }
}

#[test]
fn wrapped_paragraphs_keep_their_lines() {
    let md = "line 0\nline 1\n";
    assert_eq!(normalize_markdown(md), md);
    assert_eq!(
        roundtrip("line 0\nline 1\nline 2\n"),
        "line 0\nline 1\nline 2\n"
    );
    // Spaces at the ends of lines are not kept; the line end is.
    assert_eq!(roundtrip("line 0   \n   line 1\n"), "line 0\\\nline 1\n");
    assert_eq!(roundtrip("line 0 \n   line 1\n"), "line 0\nline 1\n");
    // Hard breaks keep their form next to soft ones.
    let md = "a\\\nb\nc\n\nd<br>\n";
    assert_eq!(roundtrip(md), md);
    // A soft break right after a hard one reads as a space, as before.
    assert_eq!(roundtrip("a<br>\nb\n"), "a\\\n&#x20;b\n");
    // So is one at the edge of marked text, where `**` would neither open nor close.
    assert_eq!(roundtrip("a<b>\nb</b>\n"), "a<strong> b</strong>\n");
    // Spaces and tabs written at a line's ends are kept there.
    let md = "a&#x20;\n&#9;b&#9;\n&#x20;c\n";
    assert_eq!(roundtrip(md), md);
    assert_eq!(
        json(md)["nodes"][0]["nodes"][0]["leaves"][0]["text"],
        "a  \tb\t  c"
    );
    assert_eq!(try_normalize_markdown("one\ntwo\n").unwrap(), "one\ntwo\n");
}

#[test]
fn wrapped_list_items_and_quotes_keep_their_lines() {
    for md in [
        "* item one\n  wrapped\n* item two\n  * nested\n    wrapped too\n",
        "1. first\n   wrapped\n2. second\n   1. nested\n      wrapped\n",
        "* [ ] task\n  wrapped\n",
        "> quoted\n> wrapped\n>\n> > inner\n> > wrapped\n",
    ] {
        assert_eq!(roundtrip(md), md);
    }
    // A lazy continuation line takes the prefix.
    assert_eq!(roundtrip("> a\nb\n"), "> a\n> b\n");
    assert_eq!(roundtrip("- a\nb\n"), "* a\n  b\n");
}

#[test]
fn wrapped_paragraphs_in_containers_keep_their_lines() {
    let md = "{% hint style=\"info\" %}\nFirst line\nsecond line.\n{% endhint %}\n\n{% tabs %}\n{% tab title=\"One\" %}\nTab text\nwrapped.\n{% endtab %}\n{% endtabs %}\n";
    assert_eq!(roundtrip(md), md);
    // Headings and captions are one line.
    assert_eq!(roundtrip("a\nb\n===\n"), "## a b\n");
    assert_eq!(
        roundtrip("[a\nb](https://x.y)\n===\n"),
        "## [a b](https://x.y)\n"
    );
    assert_eq!(
        roundtrip("{% embed url=\"https://x.y\" %}\ncap\ntion\n{% endembed %}\n"),
        "{% embed url=\"https://x.y\" %}\ncap tion\n{% endembed %}\n"
    );
    // Images on their own lines stay an images block.
    let v = serde_json::to_value(
        try_lines_document_with("![](/files/a)\n![](/files/b)\n", &DefaultLinks).unwrap(),
    )
    .unwrap();
    assert_eq!(v["nodes"][0]["type"], "images");
}

#[test]
fn continuation_lines_that_would_start_a_block_are_escaped() {
    for (md, line) in [
        ("a\n\\- b\n", "\\- b"),
        ("a\n\\# b\n", "\\# b"),
        ("a\n1\\. b\n", "1\\. b"),
        ("a\n\\> b\n", "\\> b"),
        ("a\n\\+ b\n", "\\+ b"),
        ("a\n\\{% hint %}\n", "\\{% hint %}"),
    ] {
        assert_eq!(roundtrip(md), md);
        let text = &json(md)["nodes"][0]["nodes"][0]["leaves"][0]["text"];
        assert_eq!(
            text.as_str(),
            Some(format!("a {}", line.replace('\\', "")).as_str())
        );
    }
    // In a list item, too.
    let md = "* a\n  \\- b\n";
    assert_eq!(roundtrip(md), md);
    assert_eq!(json(md)["nodes"][0]["nodes"].as_array().unwrap().len(), 1);
    // A backslash at the end of a line is not a hard break, nor a space there.
    let md = "a\\\\\nb&#x20;\nc\n";
    assert_eq!(roundtrip(md), md);
    assert_eq!(
        json(md)["nodes"][0]["nodes"][0]["leaves"][0]["text"],
        "a\\ b  c"
    );
}

#[test]
fn marks_and_links_may_span_a_soft_break() {
    let md = "Some **bold\ntext** and [a link\nover lines](https://example.com) _in\nitalic_.\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    let p = &v["nodes"][0]["nodes"];
    assert_eq!(p[0]["leaves"][1]["text"], "bold text");
    assert_eq!(p[1]["type"], "link");
    assert_eq!(p[1]["nodes"][0]["leaves"][0]["text"], "a link over lines");
    let md = "See [the page](/pages/p1)\nand [the file](/files/f1).\nA note[^1] on\nthis.\n\n[^1]: Wrapped\n    note.\n";
    assert_eq!(roundtrip(md), md);
}

#[test]
fn the_document_of_a_wrapped_paragraph_has_spaces() {
    let md = "line 0\nline 1\n\n* a\n  b\n\n> c\n> d\n";
    let doc = markdown_to_document(md);
    let mut texts = Vec::new();
    leaf_texts(&serde_json::to_value(&doc).unwrap(), &mut texts);
    assert_eq!(texts, ["line 0 line 1", "a b", "c d"]);
    assert!(texts.iter().all(|t| !t.contains(SOFT_BREAK)));
    let doc = try_markdown_to_document(md).unwrap();
    assert!(!serde_json::to_string(&doc).unwrap().contains("\\u0000"));
    assert_eq!(
        document_to_markdown(&doc),
        "line 0 line 1\n\n* a b\n\n> c d\n"
    );
    // A NUL written in the text is not a soft break.
    let out = normalize_markdown("a<b>\0</b>b\n");
    assert_eq!(
        (out.lines().count(), out.contains('\u{FFFD}')),
        (1, true),
        "{out:?}"
    );
}

#[test]
fn node_line_reads_wrapped_pages() {
    let md = "First\nparagraph.\n\n* one\n  wrapped\n\nLast.\n";
    let mut doc = markdown_to_document(md);
    doc.assign_keys("page-1");
    let key = |i: usize| doc.nodes[i].element().unwrap().key.clone().unwrap();
    assert_eq!(node_line(md, "page-1", &key(1)), Some(4));
    assert_eq!(node_line(md, "page-1", &key(2)), Some(7));
}

/// The record value and definition of column `c` of the first row of the first table.
fn cell(v: &Value, c: &str) -> (Value, Value) {
    let t = &v["nodes"][0]["data"];
    let rec = t["records"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    (rec["values"][c].clone(), t["definition"][c].clone())
}

#[test]
fn content_ref_columns_hold_references() {
    for (href, expected) in [
        (
            "/pages/abc",
            serde_json::json!({"kind": "page", "page": "abc"}),
        ),
        (
            "/pages/abc#part",
            serde_json::json!({"kind": "anchor", "anchor": "part", "page": "abc"}),
        ),
        (
            "other-page.md",
            serde_json::json!({"kind": "url", "url": "other-page.md"}),
        ),
        (
            "https://example.com/x",
            serde_json::json!({"kind": "url", "url": "https://example.com/x"}),
        ),
    ] {
        let md = format!("<table data-view=\"cards\"><thead><tr><th>Name</th><th data-hidden data-card-target data-type=\"content-ref\"></th></tr></thead><tbody><tr><td>One</td><td><a href=\"{href}\">A label &#x26; more</a></td></tr><tr><td>Two</td><td></td></tr></tbody></table>\n");
        assert_eq!(roundtrip(&md), md);
        let v = json(&md);
        let (value, def) = cell(&v, "c1");
        assert_eq!(value, expected, "{href}");
        assert!(value["kind"].is_string());
        assert_eq!(def["type"], "content-ref");
        assert_eq!(v["nodes"][0]["data"]["view"]["targetDefinition"], "c1");
    }
}

#[test]
fn content_ref_values_written_without_their_label() {
    // A value set through the API (no label fragment, or one naming another target) is
    // written with the label derived from its destination.
    let md = "<table data-view=\"cards\"><thead><tr><th>Name</th><th data-hidden data-card-target data-type=\"content-ref\"></th></tr></thead><tbody><tr><td>One</td><td><a href=\"/pages/abc\">Old</a></td></tr></tbody></table>\n";
    let mut doc = markdown_to_document(md);
    let Node::Block(t) = &mut doc.nodes[0] else {
        panic!()
    };
    let rec = t.data["records"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .next()
        .unwrap();
    rec["values"]["c1"] = serde_json::json!({"kind": "url", "url": "https://example.com/"});
    let out = document_to_markdown(&doc);
    assert!(
        out.contains("<td><a href=\"https://example.com/\">https://example.com/</a></td>"),
        "{out}"
    );
}

#[test]
fn cover_columns_hold_files_and_images() {
    let md = "<table data-view=\"cards\"><thead><tr><th>Name</th><th data-hidden data-card-cover data-type=\"files\"></th><th data-hidden data-card-cover-dark data-type=\"image\"></th></tr></thead><tbody><tr><td>One</td><td><a href=\"/files/f1\">cover.png</a></td><td><a href=\"https://example.com/dark.png\">dark.png</a></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    assert_eq!(cell(&v, "c1").0, serde_json::json!(["f1"]));
    assert_eq!(cell(&v, "c1").1["type"], "files");
    assert_eq!(
        cell(&v, "c2").0,
        serde_json::json!({"kind": "url", "url": "https://example.com/dark.png"})
    );
    let image = "<table data-view=\"cards\"><thead><tr><th>Name</th><th data-hidden data-card-cover data-type=\"image\"></th></tr></thead><tbody><tr><td>One</td><td><a href=\"/files/f1\">cover.png</a></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(image), image);
    assert_eq!(
        cell(&json(image), "c1").0,
        serde_json::json!({"kind": "file", "file": "f1"})
    );
    // Several files in one cell.
    let two = "<table><thead><tr><th>Name</th><th data-type=\"files\">Files</th></tr></thead><tbody><tr><td>One</td><td><a href=\"/files/f1\">a.pdf</a><a href=\"/files/f2\">b.pdf</a></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(two), two);
    assert_eq!(cell(&json(two), "c1").0, serde_json::json!(["f1", "f2"]));
}

#[test]
fn unknown_files_keep_the_table_raw() {
    // A files column names files by id: a link elsewhere cannot be one.
    let md = "<table data-view=\"cards\"><thead><tr><th>Name</th><th data-hidden data-card-cover data-type=\"files\"></th></tr></thead><tbody><tr><td>One</td><td><a href=\".gitbook/assets/missing.png\">missing.png</a></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    assert_eq!(v["nodes"][0]["type"], "paragraph");
    assert_eq!(v["nodes"][0]["meta"]["raw"], true);
}

#[test]
fn number_checkbox_and_rating_columns() {
    let md = "<table><thead><tr><th>Name</th><th data-type=\"number\">Count</th><th data-type=\"checkbox\">On</th><th data-type=\"rating\" data-max=\"5\">Stars</th></tr></thead><tbody><tr><td>One</td><td>42</td><td>true</td><td>3</td></tr><tr><td>Two</td><td>-2.5</td><td>false</td><td></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    assert_eq!(
        cell(&v, "c1"),
        (
            serde_json::json!(42),
            serde_json::json!({"id": "c1", "title": "Count", "type": "number"})
        )
    );
    assert_eq!(cell(&v, "c2").0, serde_json::json!(true));
    assert_eq!(cell(&v, "c3").0, serde_json::json!(3));
    assert_eq!(cell(&v, "c3").1["max"], serde_json::json!(5));
    let t = &v["nodes"][0];
    assert_eq!(t["fragments"].as_array().unwrap().len(), 2, "{t}");
    // Cells not in their column's form keep the table raw, never lose their text.
    for bad in [
        "<td>1.50</td>",
        "<td>many</td>",
        "<td><strong>4</strong></td>",
    ] {
        let md = format!("<table><thead><tr><th data-type=\"number\">N</th></tr></thead><tbody><tr>{bad}</tr></tbody></table>\n");
        assert_eq!(roundtrip(&md), md);
        assert_eq!(json(&md)["nodes"][0]["meta"]["raw"], true, "{bad}");
    }
    let md = "<table><thead><tr><th data-type=\"checkbox\">N</th></tr></thead><tbody><tr><td>yes</td></tr></tbody></table>\n";
    assert_eq!(json(md)["nodes"][0]["meta"]["raw"], true);
}

#[test]
fn select_columns() {
    let md = "<table><thead><tr><th width=\"120\">Name</th><th>Status<select><option value=\"o1\" label=\"Done &#x26; shipped\" color=\"blue\"></option><option value=\"o2\" label=\"Open\" color=\"green\"></option></select></th><th>Tags<select multiple><option value=\"t1\" label=\"API\" color=\"blue\"></option><option value=\"t2\" label=\"UI\" color=\"red\"></option></select></th></tr></thead><tbody><tr><td>One</td><td><span data-option=\"o1\">Done &#x26; shipped</span></td><td><span data-option=\"t1\">API, </span><span data-option=\"t2\">UI</span></td></tr><tr><td>Two</td><td></td><td><span data-option=\"t2\">UI</span></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    let (value, def) = cell(&v, "c1");
    assert_eq!(value, serde_json::json!(["o1"]));
    assert_eq!(def["type"], "select");
    assert_eq!(def["multiple"], false);
    assert_eq!(
        def["options"][0],
        serde_json::json!({"value": "o1", "label": "Done & shipped", "color": "blue"})
    );
    assert_eq!(cell(&v, "c2").0, serde_json::json!(["t1", "t2"]));
    assert_eq!(cell(&v, "c2").1["multiple"], true);
    // An option that is not the column's, or a label that is not its own: raw.
    for bad in [
        "<span data-option=\"zz\">X</span>",
        "<span data-option=\"o2\">Closed</span>",
        "<span data-option=\"o1\">Done &#x26; shipped, </span><span data-option=\"o2\">Open</span>",
    ] {
        let md = format!("<table><thead><tr><th>S<select><option value=\"o1\" label=\"Done &#x26; shipped\" color=\"blue\"></option><option value=\"o2\" label=\"Open\" color=\"green\"></option></select></th></tr></thead><tbody><tr><td>{bad}</td></tr></tbody></table>\n");
        assert_eq!(roundtrip(&md), md);
        assert_eq!(json(&md)["nodes"][0]["meta"]["raw"], true, "{bad}");
    }
}

#[test]
fn users_cells_keep_the_table_raw() {
    let md = "<table><thead><tr><th data-type=\"users\">Who</th></tr></thead><tbody><tr><td><a href=\"/users/u1\">u1</a></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(md), md);
    assert_eq!(json(md)["nodes"][0]["meta"]["raw"], true);
}

#[test]
fn inactive_buttons_and_mentions_with_titles() {
    // A button that leads nowhere, and mentions labelled with the title of what they name
    // (another space's page, by its URL), in text and in a cards table.
    let md = "Show a button that’s intentionally inactive:<a class=\"button primary\">Inactive button</a> <a class=\"button secondary\" data-icon=\"bolt\">Soon</a>\n\nSee [API reference](https://app.gitbook.com/s/abc/gitbook-api/api-reference \"mention\").\n\n<table data-view=\"cards\"><thead><tr><th></th><th></th></tr></thead><tbody><tr><td><h4><i class=\"fa-code\">:code:</i></h4></td><td><a data-mention href=\"https://app.gitbook.com/s/abc/gitbook-api/api-reference\">API reference</a></td></tr></tbody></table>\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    let p = &v["nodes"][0]["nodes"];
    assert_eq!(p[1]["type"], "button");
    assert_eq!(p[1]["data"]["label"], "Inactive button");
    assert_eq!(p[1]["data"]["kind"], "primary");
    assert!(p[1]["data"].get("ref").is_none());
    assert_eq!(p[3]["data"]["icon"], "bolt");
    let m = &v["nodes"][1]["nodes"][1];
    assert_eq!(m["type"], "mention");
    assert_eq!(m["data"]["ref"]["kind"], "url");
    assert_eq!(m["meta"]["label"], "API reference");
    assert_eq!(v["nodes"][2]["type"], "table");
    // A label derived from the destination is not kept.
    let v = json("[guide](/pages/abc/guide \"mention\")\n");
    assert!(v["nodes"][0]["nodes"][1].get("meta").is_none(), "{v}");
    let html = crate::html::render_document(&markdown_to_document(md), &crate::html::NoLinks).html;
    assert!(
        html.contains("<span class=\"button button-primary\">Inactive button</span>"),
        "{html}"
    );
    assert!(html.contains(">API reference</a>"), "{html}");
    assert!(
        html.contains("<span class=\"icon\" data-icon=\"code\""),
        "{html}"
    );
    assert!(!html.contains("&lt;"), "{html}");
}

#[test]
fn list_items_with_figures_and_spread_items() {
    // Git Sync writes an item whose blocks are apart at the next tab stop, its images as
    // figures; items of one block keep one space.
    let md = "1. Sign in.\n2.  Click **Install on this site**.<br>\n\n    <figure><img src=\"/files/f1\" alt=\"\"><figcaption></figcaption></figure>\n3. Done.\n\n*   **Full width**\n\n    Change the style.\n\n    1. Hover over the cover.\n    2. Click.\n*   Text\n\n    ```yaml\n    a: 1\n    ```\n* a\n  * nested\n";
    assert_eq!(roundtrip(md), md);
    let v = json(md);
    let item = &v["nodes"][0]["nodes"][1]["nodes"];
    assert_eq!(item[0]["type"], "paragraph");
    assert_eq!(item[1]["type"], "images");
    assert_eq!(item[1]["nodes"][0]["data"]["ref"]["kind"], "file");
    assert!(v["nodes"][0].get("meta").is_none());
    // A markdown image in an item stays inline.
    let v = json("* ![a](/files/f1)\n");
    assert_eq!(v["nodes"][0]["nodes"][0]["nodes"][0]["type"], "paragraph");
    // Figures in quotes are not images.
    let v =
        json("* > <figure><img src=\"/files/f1\" alt=\"\"><figcaption></figcaption></figure>\n");
    assert_eq!(v["nodes"][0]["meta"]["raw"], true);
}

#[test]
fn an_openapi_block_with_a_broken_spec_link_is_read_and_written_back() {
    let md = "{% openapi-operation spec=\"merge-index\" path=\"/v1/{collection}/merge/index\" method=\"post\" %}\n[Broken link](broken-reference)\n{% endopenapi-operation %}\n";
    assert_eq!(roundtrip(md), md);
    let doc = json(md);
    let block = &doc["nodes"][0];
    assert_eq!(block["type"], "openapi-operation", "{doc}");
    assert_eq!(block["data"]["ref"]["spec"], "merge-index", "{doc}");
    assert_eq!(block["data"]["method"], "post", "{doc}");
}
