//! Tests of the HTML renderer: each block of the dialect, from markdown through
//! `markdown_to_document`, and hostile input.

use serde_json::Map;

use super::*;
use crate::markdown::markdown_to_document;
use crate::sections::sections;

/// Resolves pages `p1`/`p2` and files `f1` (an image) and `f2` (a PDF).
struct Site;

impl Resolve for Site {
    fn page_url(&self, page_id: &str, anchor: Option<&str>) -> Option<String> {
        let base = match page_id {
            "p1" => "/docs/getting-started",
            "p2" => "/docs/guide",
            _ => return None,
        };
        Some(match anchor {
            Some(a) => format!("{base}#{a}"),
            None => base.to_string(),
        })
    }
    fn file(&self, file_id: &str) -> Option<FileRef> {
        match file_id {
            "f1" => Some(FileRef {
                url: "/files/f1/cat.png".into(),
                name: "cat.png".into(),
                content_type: "image/png".into(),
                width: Some(640),
                height: Some(480),
            }),
            "f2" => Some(FileRef {
                url: "/files/f2/manual.pdf".into(),
                name: "manual.pdf".into(),
                content_type: "application/pdf".into(),
                width: None,
                height: None,
            }),
            _ => None,
        }
    }
    fn other(&self, r: &ContentRef) -> Option<String> {
        match r {
            ContentRef::Space { space } if space == "s1" => Some("/other-space".into()),
            _ => None,
        }
    }
    fn title(&self, r: &ContentRef) -> Option<String> {
        match r {
            ContentRef::Page { page, .. } if page == "p2" => Some("The guide".into()),
            _ => None,
        }
    }
}

fn render(md: &str) -> String {
    render_document(&markdown_to_document(md), &Site).html
}

/// Checks that `html` cannot run script: it is read as tags (every attribute value
/// double-quoted, as the renderer writes them) and text, and no tag is a script, frame or
/// object, no attribute is `style`, `srcdoc` or an event handler, and no URL attribute
/// holds a script or data URL. Text between tags is inert once tags are well formed.
fn assert_inert(html: &str) {
    let b = html.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        i += 1;
        let closing = b.get(i) == Some(&b'/');
        if closing {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let name = html[start..i].to_ascii_lowercase();
        assert!(!name.is_empty(), "stray < at {start} in {html}");
        assert!(
            !["script", "iframe", "object", "embed", "frame", "style", "svg", "math"]
                .contains(&name.as_str()),
            "<{name}> in {html}"
        );
        loop {
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            assert!(i < b.len(), "unclosed tag in {html}");
            if b[i] == b'>' {
                i += 1;
                break;
            }
            let attr_start = i;
            while i < b.len() && !matches!(b[i], b' ' | b'=' | b'>') {
                i += 1;
            }
            let attr = html[attr_start..i].to_ascii_lowercase();
            assert!(
                attr.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "odd attribute {attr:?} in {html}"
            );
            assert!(
                !attr.starts_with("on") && attr != "style" && attr != "srcdoc",
                "attribute {attr} in {html}"
            );
            if b.get(i) == Some(&b'=') {
                assert_eq!(b.get(i + 1), Some(&b'"'), "unquoted value in {html}");
                let v_start = i + 2;
                let v_end = v_start + html[v_start..].find('"').expect("closed value");
                let value = html[v_start..v_end].trim().to_ascii_lowercase();
                if ["href", "src", "srcset", "action", "formaction"].contains(&attr.as_str()) {
                    for bad in ["javascript:", "data:", "vbscript:"] {
                        assert!(!value.starts_with(bad), "{attr}={value} in {html}");
                    }
                }
                i = v_end + 1;
            }
        }
    }
}

#[test]
fn headings_have_the_search_anchors() {
    let md = "Intro.\n\n## Install\n\nText.\n\n### Details {#custom}\n\n## Install\n\n{% hint style=\"info\" %}\n### Install\n{% endhint %}\n\n## Install\n";
    let doc = markdown_to_document(md);
    let out = render_document(&doc, &Site);
    let ids: Vec<String> = sections(md)
        .into_iter()
        .map(|s| s.id)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(ids, ["install", "custom", "install-1", "install-2"]);
    let anchors: Vec<&str> = out.outline.iter().map(|o| o.anchor.as_str()).collect();
    assert_eq!(anchors, ids);
    for id in &ids {
        assert!(
            out.html.contains(&format!(" id=\"{id}\">")),
            "{id} in {}",
            out.html
        );
    }
    assert_eq!(out.outline[1].level, 2);
    assert_eq!(out.outline[0].text, "Install");
    assert!(out
        .html
        .contains("<h2 id=\"install\">Install <a class=\"anchor\" href=\"#install\""));
    assert!(out.html.contains("<h3 id=\"custom\">"));
    // The nested heading takes a free anchor, after the top-level ones.
    assert!(out.html.contains("<h3 id=\"install-3\">"), "{}", out.html);
}

#[test]
fn paragraphs_and_marks() {
    let html = render("Some **bold**, _italic_, ~~gone~~, `x < y` and <kbd>Ctrl</kbd> H<sub>2</sub>O x<sup>2</sup>.");
    assert!(
        html.starts_with(
            "<p>Some <strong>bold</strong>, <em>italic</em>, <s>gone</s>, <code>x &lt; y</code>"
        ),
        "{html}"
    );
    assert!(html.contains("<kbd>Ctrl</kbd>"), "{html}");
    assert!(html.contains("<sub>2</sub>"), "{html}");
    assert!(html.contains("<sup>2</sup>"), "{html}");
}

#[test]
fn colour_marks_are_classes() {
    let html = render("<mark style=\"color:red;\">warm</mark> text");
    assert!(
        html.contains("<mark class=\"color-red\">warm</mark>"),
        "{html}"
    );
    assert_inert(&html);
}

#[test]
fn links_of_every_kind() {
    let html = render(
        "[web](https://example.com/a?b=1&c=2) [page](/pages/p1) [anchor](/pages/p2#setup) [here](#local) [file](/files/f2) [space](/spaces/s1) [gone](/pages/nope) [mail](mailto:a@b.c)",
    );
    assert!(
        html.contains(
            "<a href=\"https://example.com/a?b=1&amp;c=2\" rel=\"noopener noreferrer\">web</a>"
        ),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"/docs/getting-started\">page</a>"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"/docs/guide#setup\">anchor</a>"),
        "{html}"
    );
    assert!(html.contains("<a href=\"#local\">here</a>"), "{html}");
    assert!(
        html.contains("<a href=\"/files/f2/manual.pdf\">file</a>"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"/other-space\">space</a>"),
        "{html}"
    );
    assert!(html.contains(" gone "), "unresolved is text: {html}");
    assert!(!html.contains("nope"), "{html}");
    assert!(html.contains("<a href=\"mailto:a@b.c\">mail</a>"), "{html}");
}

#[test]
fn lists() {
    let html = render("* a\n* b\n  * nested\n\n3. three\n4. four\n\n* [ ] todo\n* [x] done\n");
    assert!(
        html.starts_with(
            "<ul><li><p>a</p></li><li><p>b</p><ul><li><p>nested</p></li></ul></li></ul>"
        ),
        "{html}"
    );
    assert!(
        html.contains("<ol start=\"3\"><li><p>three</p></li>"),
        "{html}"
    );
    assert!(html.contains("<ul class=\"task-list\"><li class=\"task\"><input type=\"checkbox\" aria-label=\"Task\" disabled> <p>todo</p></li><li class=\"task\"><input type=\"checkbox\" aria-label=\"Task\" disabled checked> <p>done</p></li></ul>"), "{html}");
}

#[test]
fn quotes_dividers_and_math() {
    let html = render("> quoted\n\n***\n\n$$a < b$$\n");
    assert!(
        html.contains("<blockquote><p>quoted</p></blockquote>"),
        "{html}"
    );
    assert!(html.contains("<hr>"), "{html}");
    assert!(
        html.contains("<div class=\"math\">a &lt; b</div>"),
        "{html}"
    );
    let inline = render("Energy $$E=mc^2$$ here.");
    assert!(
        inline.contains("<span class=\"math\">E=mc^2</span>"),
        "{inline}"
    );
}

#[test]
fn hints() {
    for (style, label) in [
        ("info", "Info"),
        ("success", "Success"),
        ("warning", "Warning"),
        ("danger", "Danger"),
    ] {
        let html = render(&format!(
            "{{% hint style=\"{style}\" %}}\nCareful **now**.\n{{% endhint %}}\n"
        ));
        assert!(html.starts_with(&format!("<aside class=\"hint hint-{style}\" role=\"note\" aria-label=\"{label}\"><p>Careful <strong>now</strong>.</p></aside>")), "{html}");
    }
}

#[test]
fn tabs_work_without_script() {
    let html = render("{% tabs %}\n{% tab title=\"First\" %}\nOne\n{% endtab %}\n\n{% tab title=\"Second <2>\" %}\nTwo\n{% endtab %}\n{% endtabs %}\n");
    assert!(html.contains("role=\"tablist\""), "{html}");
    assert!(html.contains("<a class=\"tab\" role=\"tab\" id=\"tabs:1:tab:1\" href=\"#tabs:1:panel:1\" aria-controls=\"tabs:1:panel:1\" aria-selected=\"true\">First</a>"), "{html}");
    assert!(
        html.contains("aria-selected=\"false\">Second &lt;2&gt;</a>"),
        "{html}"
    );
    assert!(html.contains("<section class=\"tab-panel\" role=\"tabpanel\" id=\"tabs:1:panel:2\" aria-labelledby=\"tabs:1:tab:2\"><p class=\"tab-title\" role=\"heading\" aria-level=\"4\">Second &lt;2&gt;</p><p>Two</p></section>"), "{html}");
    assert!(!html.contains("hidden"), "every panel visible: {html}");
}

#[test]
fn expandables() {
    let html = render(
        "<details>\n\n<summary>More <em>info</em></summary>\n\nHidden text.\n\n</details>\n",
    );
    assert_eq!(html, "<details class=\"expandable\"><summary>More <em>info</em></summary><p>Hidden text.</p></details>");
}

#[test]
fn code_blocks_are_highlighted() {
    let html = render("{% code title=\"main.rs\" lineNumbers=\"true\" %}\n```rust\nfn main() {\n    let s = \"<b>\";\n}\n```\n{% endcode %}\n");
    assert!(html.starts_with("<figure class=\"code-block\"><figcaption class=\"code-title\">main.rs</figcaption><pre class=\"code hl-code line-numbers\" tabindex=\"0\"><code class=\"language-rust\">"), "{html}");
    assert!(html.contains("<span class=\"hl-"), "{html}");
    assert!(html.contains("&lt;b&gt;"), "{html}");
    assert_eq!(html.matches("<span class=\"line\">").count(), 3, "{html}");
    assert!(
        html.contains("<span class=\"hl-string hl-quoted hl-double\">"),
        "{html}"
    );
    assert!(!html.contains("hl-meta"), "{html}");
    // A comment over several lines: each line has its own span.
    let multi = render("```js\n/* one\ntwo */ x\n```\n");
    let lines: Vec<&str> = multi.split("<span class=\"line\">").skip(1).collect();
    assert_eq!(lines.len(), 2, "{multi}");
    for l in lines {
        assert_eq!(
            l.matches("<span").count() + 1,
            l.matches("</span>").count(),
            "{multi}"
        );
        assert!(l.contains("hl-comment"), "{multi}");
    }
    // Unknown languages and plain blocks are escaped text.
    let plain = render("```nosuchlang\n<b>x</b>\n```\n");
    assert!(
        plain.contains("<span class=\"line\">&lt;b&gt;x&lt;/b&gt;</span>"),
        "{plain}"
    );
    let css = highlight_css();
    assert!(css.contains(".hl-") && css.contains("prefers-color-scheme: dark"));
    // Every token colour reads on its theme's backgrounds (WCAG AA, 4.5:1).
    let (light, dark) = css.split_once("prefers-color-scheme: dark").unwrap();
    for (part, backgrounds) in [
        (light, [[0xff, 0xff, 0xff], [0xf5, 0xf6, 0xf8]]),
        (dark, [[0x2b, 0x30, 0x3b], [0x1e, 0x21, 0x27]]),
    ] {
        let colours: Vec<[u8; 3]> = part
            .split(" color: #")
            .skip(1)
            .map(|c| {
                let byte = |i: usize| u8::from_str_radix(&c[i..i + 2], 16).unwrap();
                [byte(0), byte(2), byte(4)]
            })
            .collect();
        assert!(colours.len() > 5, "{part}");
        for c in colours {
            for b in backgrounds {
                assert!(super::highlight::contrast(c, b) >= 4.5, "{c:?} on {b:?}");
            }
        }
    }
}

#[test]
fn large_code_is_not_highlighted() {
    let body = "let x = 1;\n".repeat(MAX_HIGHLIGHT_BYTES / 10);
    let html = render(&format!("```rust\n{body}```\n"));
    assert!(!html.contains("<span class=\"hl-"));
    assert!(html.contains("<span class=\"line\">let x = 1;</span>"));
}

#[test]
fn tables_have_headers() {
    let html = render("| Name | Size |\n| --- | :-: |\n| **a** | 1 |\n| b | 2 |\n");
    assert!(html.starts_with("<div class=\"table-wrap\" tabindex=\"0\"><table><thead><tr><th scope=\"col\">Name</th><th scope=\"col\" class=\"align-center\">Size</th></tr></thead><tbody><tr><td><p><strong>a</strong></p></td><td class=\"align-center\"><p>1</p></td></tr>"), "{html}");
    assert!(html.ends_with("</tbody></table></div>"), "{html}");
}

#[test]
fn card_tables() {
    let md = "<table data-view=\"cards\"><thead><tr><th></th><th data-hidden data-card-target data-type=\"content-ref\"></th></tr></thead><tbody><tr><td><strong>Guide</strong></td><td><a href=\"/pages/p2\">x</a></td></tr></tbody></table>\n";
    let doc = markdown_to_document(md);
    assert_eq!(doc.nodes[0].element().unwrap().kind, "table", "{doc:?}");
    let html = render_document(&doc, &Site).html;
    assert!(html.starts_with("<div class=\"cards\"><article class=\"card\"><div class=\"card-cell\"><p><strong>Guide</strong></p></div><a href=\"/docs/guide\" class=\"card-target\">The guide</a></article></div>"), "{html}");
}

#[test]
fn cards_link_to_their_target_and_show_their_cover() {
    let md = "<table data-view=\"cards\"><thead><tr><th></th><th data-hidden data-card-target data-type=\"content-ref\"></th><th data-hidden data-card-cover data-type=\"files\"></th><th data-hidden data-card-cover-dark data-type=\"image\"></th></tr></thead><tbody>\
        <tr><td>Page</td><td><a href=\"/pages/p1#setup\">setup</a></td><td><a href=\"/files/f1\">cat.png</a></td><td><a href=\"https://cdn.example.com/dark.png\">dark.png</a></td></tr>\
        <tr><td>Web</td><td><a href=\"https://example.com/a?b=1&#x26;c=&#x3C;\">x</a></td><td></td><td></td></tr>\
        <tr><td>Unknown</td><td><a href=\"/pages/nope\">nope</a></td><td><a href=\"/files/zz\">zz.png</a></td><td></td></tr>\
        <tr><td>Script</td><td><a href=\"javascript:alert(1)\">x</a></td><td></td><td><a href=\"javascript:alert(2)\">x</a></td></tr>\
        </tbody></table>\n";
    let doc = markdown_to_document(md);
    assert_eq!(doc.nodes[0].element().unwrap().kind, "table", "{doc:?}");
    let html = render_document(&doc, &Site).html;
    assert_inert(&html);
    // A page target through the resolver, its cover a file with a dark variant.
    assert!(html.contains("<article class=\"card\"><picture><source srcset=\"https://cdn.example.com/dark.png\" media=\"(prefers-color-scheme: dark)\"><img class=\"card-cover\" src=\"/files/f1/cat.png\" alt=\"\" loading=\"lazy\"></picture><div class=\"card-cell\"><p>Page</p></div><a href=\"/docs/getting-started#setup\" class=\"card-target\">/docs/getting-started#setup</a></article>"), "{html}");
    // A URL target, escaped.
    assert!(html.contains("<a href=\"https://example.com/a?b=1&amp;c=&lt;\" class=\"card-target\" rel=\"noopener noreferrer\">"), "{html}");
    // What cannot be resolved, or is not a safe URL, is no link and no image.
    assert!(
        html.contains(
            "<article class=\"card\"><div class=\"card-cell\"><p>Unknown</p></div></article>"
        ),
        "{html}"
    );
    assert!(
        html.contains(
            "<article class=\"card\"><div class=\"card-cell\"><p>Script</p></div></article>"
        ),
        "{html}"
    );
    assert!(!html.contains("javascript"), "{html}");
}

#[test]
fn typed_columns_are_shown() {
    let md = "<table><thead><tr><th>Name</th><th data-type=\"number\">N</th><th data-type=\"checkbox\">On</th><th data-type=\"rating\" data-max=\"5\">Stars</th><th>Status<select multiple><option value=\"o1\" label=\"&#x3C;b>Done\" color=\"blue\"></option><option value=\"o2\" label=\"Open\" color=\"green\"></option></select></th><th data-type=\"content-ref\">Link</th><th data-type=\"files\">Files</th></tr></thead><tbody><tr><td>One</td><td>42</td><td>true</td><td>3</td><td><span data-option=\"o1\">&#x3C;b>Done, </span><span data-option=\"o2\">Open</span></td><td><a href=\"/pages/p2\">the label</a></td><td><a href=\"/files/f2\">manual.pdf</a></td></tr></tbody></table>\n";
    let doc = markdown_to_document(md);
    assert_eq!(doc.nodes[0].element().unwrap().kind, "table", "{doc:?}");
    let html = render_document(&doc, &Site).html;
    assert_inert(&html);
    assert!(
        html.contains("<td>42</td><td><input type=\"checkbox\" disabled checked></td>"),
        "{html}"
    );
    assert!(html.contains("<td><span class=\"rating\" role=\"img\" aria-label=\"3 / 5\">\u{2605}\u{2605}\u{2605}\u{2606}\u{2606}</span></td>"), "{html}");
    assert!(html.contains("<td><span class=\"option\">&lt;b&gt;Done</span> <span class=\"option\">Open</span></td>"), "{html}");
    // A link cell keeps its label; its target goes through the resolver.
    assert!(
        html.contains("<a href=\"/docs/guide\">the label</a>"),
        "{html}"
    );
    assert!(html.contains("/files/f2/manual.pdf"), "{html}");
}

#[test]
fn ratings_stay_small() {
    assert_eq!(
        rating(2.0, Some(1e12)),
        "<span class=\"rating\">2 / 1000000000000</span>"
    );
    assert_eq!(rating(9.0, Some(2.0)).matches('\u{2605}').count(), 2);
    assert_eq!(rating(f64::NAN, None).matches('\u{2606}').count(), 5);
}

#[test]
fn images_and_figures() {
    let html = render("<figure><img src=\"/files/f1\" alt=\"A cat\"><figcaption><p>My <strong>cat</strong></p></figcaption></figure>\n");
    assert!(html.contains("<figure class=\"image\"><img class=\"image\" src=\"/files/f1/cat.png\" alt=\"A cat\" width=\"640\" height=\"480\" loading=\"lazy\"><figcaption>My <strong>cat</strong></figcaption></figure>"), "{html}");
    let md_image = render("![A caption](https://example.com/x.png)\n");
    assert!(
        md_image.contains("src=\"https://example.com/x.png\""),
        "{md_image}"
    );
    assert!(
        md_image.contains("<figcaption>A caption</figcaption>"),
        "{md_image}"
    );
    let inline = render("Look ![icon](/files/f1) here.");
    assert!(
        inline.contains("<img class=\"inline-image\" src=\"/files/f1/cat.png\" alt=\"icon\""),
        "{inline}"
    );
}

#[test]
fn files_and_embeds() {
    let html = render("{% file src=\"/files/f2\" %}\nThe manual\n{% endfile %}\n\n{% embed url=\"https://www.youtube.com/watch?v=x\" %}\n");
    assert!(html.contains("<div class=\"file\"><a class=\"file-link\" download href=\"/files/f2/manual.pdf\">manual.pdf</a> <span class=\"file-type\">application/pdf</span><p class=\"caption\">The manual</p></div>"), "{html}");
    assert!(html.contains("<div class=\"embed\"><a href=\"https://www.youtube.com/watch?v=x\" class=\"embed-link\" rel=\"noopener noreferrer\">https://www.youtube.com/watch?v=x</a></div>"), "{html}");
    assert!(!html.contains("iframe"));
}

#[test]
fn content_refs_and_mentions() {
    let html =
        render("{% content-ref url=\"/pages/p2\" %}\n[p2](/pages/p2)\n{% endcontent-ref %}\n");
    assert_eq!(html, "<div class=\"content-ref\"><a href=\"/docs/guide\" class=\"content-ref-link\">The guide</a></div>");
    let unknown =
        render("{% content-ref url=\"/pages/zz\" %}\n[zz](/pages/zz)\n{% endcontent-ref %}\n");
    assert_eq!(unknown, "");
    let mention = render("See [p2](/pages/p2 \"mention\").");
    assert!(
        mention.contains("<a href=\"/docs/guide\" class=\"mention\">The guide</a>"),
        "{mention}"
    );
}

#[test]
fn steppers_columns_and_updates() {
    let html = render("{% stepper %}\n{% step %}\nFirst\n{% endstep %}\n\n{% step %}\nSecond\n{% endstep %}\n{% endstepper %}\n\n{% columns %}\n{% column %}\nLeft\n{% endcolumn %}\n\n{% column %}\nRight\n{% endcolumn %}\n{% endcolumns %}\n");
    assert!(html.contains("<ol class=\"stepper\"><li class=\"step\"><p>First</p></li><li class=\"step\"><p>Second</p></li></ol>"), "{html}");
    assert!(html.contains("<div class=\"columns\"><div class=\"column\"><p>Left</p></div><div class=\"column\"><p>Right</p></div></div>"), "{html}");
    let updates = render("{% updates format=\"full\" %}\n{% update date=\"2024-05-01\" %}\nShipped.\n{% endupdate %}\n{% endupdates %}\n");
    assert!(
        updates.contains(
            "<article class=\"update\"><p class=\"update-date\"><time datetime=\"2024-05-01"
        ),
        "{updates}"
    );
    assert!(
        updates.contains("<p>Shipped.</p></article></div>"),
        "{updates}"
    );
}

#[test]
fn openapi_operation_placeholders_name_their_spec() {
    let html = render("{% openapi-operation spec=\"pet-store\" path=\"/pets/{id}\" method=\"get\" %}\n[OpenAPI pet-store](https://x.y/spec.json)\n{% endopenapi-operation %}\n\nAfter.\n");
    let found = openapi_placeholders(&html);
    assert_eq!(found.len(), 1, "{html}");
    assert_eq!(found[0].spec, "pet-store");
    assert_eq!(found[0].path, "/pets/{id}");
    assert_eq!(found[0].method, "get");
    let part = &html[found[0].range.clone()];
    assert!(
        part.starts_with("<div class=\"openapi openapi-operation\"") && part.ends_with("</div>"),
        "{part}"
    );
    assert!(!html[found[0].range.end..].contains("openapi"), "{html}");
}

#[test]
fn openapi_blocks_are_placeholders() {
    let html = render("{% openapi-operation spec=\"petstore\" path=\"/pets/{id}\" method=\"get\" %}\n[OpenAPI petstore](https://x.y/spec.json)\n{% endopenapi-operation %}\n");
    assert!(html.contains("<span class=\"openapi-method method-get\">GET</span> <code class=\"openapi-path\">/pets/{id}</code>"), "{html}");
    let swagger = render("{% openapi src=\"https://x.y/spec.json\" path=\"/pets\" method=\"post\" %}\n[https://x.y/spec.json](https://x.y/spec.json)\n{% endopenapi %}\n");
    assert!(swagger.contains("<span class=\"openapi-method method-post\">POST</span> <code class=\"openapi-path\">/pets</code>"), "{swagger}");
}

#[test]
fn conditions_and_annotations() {
    let hidden = render("{% if visitor.claims.pro %}\nSecret\n{% endif %}\n");
    assert_eq!(hidden, "");
    let notes = render("A claim[^1].\n\n[^1]: The proof.\n");
    assert!(
        notes.contains("<sup class=\"note-ref\"><a href=\"#note:1\" id=\"note-ref:1\">1</a></sup>"),
        "{notes}"
    );
    assert!(
        notes.contains("<li id=\"note:1\"><p>The proof.</p>"),
        "{notes}"
    );
}

#[test]
fn unknown_types_render_their_content() {
    let mut data = Map::new();
    data.insert("x".into(), Value::String("<script>".into()));
    let doc = Document::new(vec![Node::block(
        "future-block",
        data,
        vec![Node::paragraph(vec![Node::text("kept <text>")])],
    )]);
    let html = render_document(&doc, &NoLinks).html;
    assert_eq!(html, "<p>kept &lt;text&gt;</p>");
}

#[test]
fn hostile_text_is_escaped() {
    let md = "## <script>alert(1)</script>\n\nHi \"><img src=x onerror=alert(1)>\n\n<script>alert(2)</script>\n\n<img src=x onerror=alert(1)>\n\n```html\n</code></pre><script>alert(3)</script>\n```\n\n```\n</code></pre><script>alert(4)</script>\n```\n\n{% tabs %}\n{% tab title=\"&quot;><script>x</script>\" %}\nT\n{% endtab %}\n{% endtabs %}\n";
    let html = render(md);
    assert_inert(&html);
    assert!(!html.contains("<img src=x"), "{html}");
    assert!(html.contains("&lt;script&gt;"), "{html}");
    let title = render_inline(&[Node::text("\"><img onerror=alert(1)>")], &NoLinks);
    assert_eq!(title, "&quot;&gt;&lt;img onerror=alert(1)&gt;");
    assert_eq!(escape_attr("a'b\"<>&"), "a&#39;b&quot;&lt;&gt;&amp;");
}

#[test]
fn dangerous_urls_are_text() {
    for href in [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "\u{1}javascript:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html,<script>alert(1)</script>",
    ] {
        assert_eq!(safe_url(href), None, "{href:?}");
    }
    assert_eq!(safe_url(" https://x.y "), Some("https://x.y"));
    assert_eq!(safe_url("/a/b?c#d"), Some("/a/b?c#d"));
    assert_eq!(safe_url("#top"), Some("#top"));
    assert_eq!(safe_url("TEL:+100"), Some("TEL:+100"));
    let md = "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](< javascript:alert(1)>) [d](&#106;avascript:alert(1)) [e](java&#9;script:alert(1)) [f](data:text/html;base64,PHNjcmlwdD4=) ![g](javascript:alert(1)) [h](vbscript:x)\n\n{% embed url=\"javascript:alert(1)\" %}\n";
    let html = render(md);
    assert_inert(&html);
    assert!(!html.contains("href=\"data:"), "{html}");
    assert!(!html.contains("href=\"vbscript:"), "{html}");
    assert!(html.starts_with("<p>a b c d e f"), "{html}");
    assert!(!html.contains("<a "), "{html}");
}

#[test]
fn deep_documents_do_not_overflow() {
    let mut node = Node::paragraph(vec![Node::text("deep")]);
    for _ in 0..100_000 {
        node = Node::block("blockquote", Map::new(), vec![node]);
    }
    let doc = Document::new(vec![node]);
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let html = render_document(&doc, &NoLinks).html;
            // Dropping is recursive: keep the document alive past this thread.
            std::mem::forget(doc);
            html
        })
        .unwrap();
    let html = handle.join().unwrap();
    assert_eq!(html.matches("<blockquote>").count(), MAX_DEPTH);
    assert!(html.contains("deep"));
    // Deep markdown comes back as one raw paragraph, rendered within the same bound.
    let md = "> ".repeat(MAX_DEPTH * 2) + "x";
    let html = render(&md);
    assert!(html.starts_with("<div class=\"raw\">"), "{html}");
    assert_eq!(
        html.matches("<blockquote>").count(),
        MAX_DEPTH - 1,
        "{html}"
    );
    assert!(html.contains('x'));
    // Raw HTML nested deeper than can be read in bounded time is shown as text.
    let md = "<div>".repeat(MAX_DEPTH * 8) + "x";
    let html = render(&md);
    assert!(html.starts_with("<p class=\"raw\">&lt;div&gt;"), "{html}");
}

#[test]
fn repeated_fragments_are_written_once() {
    // A table whose every record names the same cell fragment: output stays linear.
    let mut doc = markdown_to_document("| A |\n| --- |\n| big |\n");
    let Node::Block(table) = &mut doc.nodes[0] else {
        panic!()
    };
    let records = table
        .data
        .get_mut("records")
        .unwrap()
        .as_object_mut()
        .unwrap();
    let first = records.values().next().unwrap().clone();
    for i in 0..1000 {
        records.insert(format!("x{i}"), first.clone());
    }
    let html = render_document(&doc, &NoLinks).html;
    assert_eq!(html.matches("big").count(), 1);
}

mod props {
    use proptest::prelude::*;

    use super::*;

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z <>\"'=/&;:#()\\[\\]!*_`~{}%|\n-]{0,24}",
            Just("<script>alert(1)</script>".to_string()),
            Just("<img src=x onerror=alert(1)>".to_string()),
            Just("\"><svg onload=alert(1)>".to_string()),
            Just("[x](javascript:alert(1))".to_string()),
            Just("[x](JaVaScRiPt:alert(1))".to_string()),
            Just("[x](&#106;avascript:alert(1))".to_string()),
            Just("![x](javascript:alert(1))".to_string()),
            Just("<a href=\"javascript:alert(1)\" onclick=\"x()\">y</a>".to_string()),
            Just("{% embed url=\"javascript:alert(1)\" %}".to_string()),
            Just(
                "{% hint style=\"x onmouseover=alert(1)\" %}\n<b onclick=1>\n{% endhint %}"
                    .to_string()
            ),
            Just("```js\n</code></pre><script>alert(1)</script>\n```".to_string()),
            Just(
                "<figure><img src=\"javascript:alert(1)\" alt=\"\\\" onerror=1\"></figure>"
                    .to_string()
            ),
            Just("<mark style=\"color:red;\">x</mark>".to_string()),
            Just("<details>\n<summary><script>s</script></summary>\n\nb\n</details>".to_string()),
            Just("| <script> | b |\n| --- | --- |\n| onerror=1 | x |".to_string()),
            Just(
                "{% tabs %}\n{% tab title=\"<script>\" %}\nx\n{% endtab %}\n{% endtabs %}"
                    .to_string()
            ),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_markdown_renders_inert(
            pieces in prop::collection::vec(piece(), 0..8),
            seps in prop::collection::vec(prop_oneof![Just(""), Just(" "), Just("\n"), Just("\n\n"), Just("\n> "), Just("\n* ")], 8),
        ) {
            let mut md = String::new();
            for (p, s) in pieces.iter().zip(&seps) {
                md.push_str(p);
                md.push_str(s);
            }
            let out = render_document(&markdown_to_document(&md), &Site);
            assert_inert(&out.html);
            let _ = render_inline(&markdown_to_document(&md).nodes, &NoLinks);
        }
    }

    #[test]
    fn arbitrary_documents_render_inert() {
        // Generating nested documents takes more stack than a test thread has in debug
        // builds (the renderer itself needs little: see the deep document test).
        std::thread::Builder::new()
            .stack_size(64 * 1024 * 1024)
            .spawn(|| {
                let config = ProptestConfig {
                    cases: 256,
                    failure_persistence: None,
                    ..ProptestConfig::default()
                };
                proptest::test_runner::TestRunner::new(config)
                    .run(&document(), |doc| {
                        let out = render_document(&doc, &Site);
                        assert_inert(&out.html);
                        assert_inert(&render_inline(&doc.nodes, &Site));
                        Ok(())
                    })
                    .unwrap();
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// A hostile string: markup, script URLs, quotes.
    fn hostile() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z<>\"' =:/&#;()-]{0,12}",
            Just("javascript:alert(1)".to_string()),
            Just(" JaVaScRiPt:alert(1)".to_string()),
            Just("data:text/html,<script>alert(1)</script>".to_string()),
            Just("\" onmouseover=\"alert(1)".to_string()),
            Just("x' onerror='alert(1)".to_string()),
            Just("<script>alert(1)</script>".to_string()),
            Just("https://ok.example/a b,c".to_string()),
        ]
    }

    /// A reference of any kind, with hostile values.
    fn reference() -> impl Strategy<Value = Value> {
        let h = hostile;
        prop_oneof![
            h().prop_map(|u| serde_json::json!({"kind": "url", "url": u})),
            prop_oneof![Just("p1".to_string()), Just("p2".to_string()), h()]
                .prop_map(|p| serde_json::json!({"kind": "page", "page": p})),
            (h(), prop::option::of(Just("p1"))).prop_map(|(a, p)| match p {
                Some(p) => serde_json::json!({"kind": "anchor", "anchor": a, "page": p}),
                None => serde_json::json!({"kind": "anchor", "anchor": a}),
            }),
            prop_oneof![Just("f1".to_string()), h()]
                .prop_map(|f| serde_json::json!({"kind": "file", "file": f})),
            Just(serde_json::json!({"kind": "space", "space": "s1"})),
            h().prop_map(Value::String),
        ]
    }

    /// Data with the keys the renderer reads, every value hostile.
    fn data() -> impl Strategy<Value = Map<String, Value>> {
        let keys = prop_oneof![
            Just("url"),
            Just("style"),
            Just("syntax"),
            Just("title"),
            Just("formula"),
            Just("expression"),
            Just("alt"),
            Just("caption"),
            Just("icon"),
            Just("code"),
            Just("label"),
            Just("kind"),
            Just("method"),
            Just("path"),
            Just("name"),
            Just("date"),
            Just("id"),
            Just("align"),
            Just("overflow"),
            Just("integration"),
        ];
        (
            prop::collection::vec((keys, hostile()), 0..4),
            prop::option::of(reference()),
            prop::option::of(reference()),
            prop::option::of(any::<i64>()),
        )
            .prop_map(|(pairs, r, dark, n)| {
                let mut m = Map::new();
                for (k, v) in pairs {
                    m.insert(k.to_string(), Value::String(v));
                }
                if let Some(r) = r {
                    m.insert("ref".into(), r);
                }
                if let Some(d) = dark {
                    m.insert("refDark".into(), d);
                }
                if let Some(n) = n {
                    m.insert("start".into(), n.into());
                    m.insert("width".into(), n.into());
                }
                m
            })
    }

    const KINDS: [&str; 44] = [
        "paragraph",
        "heading-1",
        "heading-2",
        "heading-3",
        "list-unordered",
        "list-ordered",
        "list-tasks",
        "list-item",
        "blockquote",
        "code",
        "code-line",
        "divider",
        "math",
        "hint",
        "tabs",
        "tabs-item",
        "stepper",
        "stepper-step",
        "columns",
        "column",
        "updates",
        "update",
        "if",
        "prompt",
        "expandable",
        "embed",
        "file",
        "content-ref",
        "reusable-content",
        "swagger",
        "openapi-operation",
        "openapi-webhook",
        "openapi-schemas",
        "integration",
        "images",
        "image",
        "drawing",
        "table",
        "link",
        "mention",
        "emoji",
        "button",
        "inline-image",
        "annotation",
    ];

    fn kind() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => prop::sample::select(&KINDS[..]).prop_map(str::to_string),
            1 => hostile(),
        ]
    }

    fn text() -> impl Strategy<Value = Node> {
        (
            hostile(),
            prop::collection::vec(
                prop_oneof![Just("bold"), Just("code"), Just("color"), Just("x onclick")],
                0..2,
            ),
        )
            .prop_map(|(t, marks)| {
                Node::Text(Text {
                    key: None,
                    leaves: vec![Leaf {
                        text: t,
                        marks: marks
                            .into_iter()
                            .map(|k| crate::document::Mark {
                                kind: k.into(),
                                data: Some(Map::from_iter([(
                                    "text".to_string(),
                                    Value::String("red\" style=\"x".into()),
                                )])),
                            })
                            .collect(),
                    }],
                })
            })
    }

    fn document() -> impl Strategy<Value = Document> {
        let leaf = text();
        let tree = leaf.prop_recursive(5, 48, 4, |inner| {
            (
                kind(),
                data(),
                prop::collection::vec(inner.clone(), 0..4),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("caption".to_string()),
                            Just("expandable-title".to_string()),
                            Just("expandable-body".to_string()),
                            Just("annotation-body".to_string()),
                            hostile(),
                        ],
                        prop::collection::vec(inner, 0..3),
                    ),
                    0..2,
                ),
                any::<bool>(),
            )
                .prop_map(|(kind, data, nodes, fragments, inline)| {
                    let mut e = Element::with_nodes(&kind, data, nodes);
                    e.fragments = Some(
                        fragments
                            .into_iter()
                            .map(|(name, nodes)| Fragment {
                                key: None,
                                fragment: Some(name),
                                kind: None,
                                nodes,
                            })
                            .collect(),
                    );
                    if inline {
                        Node::Inline(e)
                    } else {
                        Node::Block(e)
                    }
                })
        });
        prop::collection::vec(tree, 0..6).prop_map(Document::new)
    }
}

#[test]
fn inline_elements() {
    let html = render("<a href=\"https://x.y\" class=\"button primary\">Go</a> <span data-gb-custom-inline data-tag=\"emoji\" data-code=\"1f600\">😀</span> <i class=\"fa-apple\">:apple:</i> <code class=\"expression\">space.vars.x</code>\n");
    assert_eq!(html, "<p><a href=\"https://x.y\" class=\"button button-primary\" rel=\"noopener noreferrer\">Go</a> <span class=\"emoji\">😀</span> <span class=\"icon\" data-icon=\"apple\" aria-hidden=\"true\"></span> <code class=\"expression\">space.vars.x</code></p>");
}

#[test]
fn other_blocks() {
    let html = render("{% include \"/reusable-contents/r1\" %}\n\n{% @github/repo url=\"x\" %}\n\n<img src=\"/files/f1\" alt=\"d\" class=\"gitbook-drawing\">\n\n<div><figure><img src=\"/files/f1\" alt=\"a\"><figcaption></figcaption></figure> <figure><img src=\"https://x.y/b.png\" alt=\"b\"><figcaption></figcaption></figure></div>\n");
    assert!(html.starts_with("<div class=\"reusable-content\" data-reusable-content=\"r1\"></div><div class=\"integration\"><span class=\"integration-name\">github / repo</span></div>"), "{html}");
    assert!(html.contains("<figure class=\"drawing\"><img class=\"drawing\" src=\"/files/f1/cat.png\" alt=\"d\" width=\"640\" height=\"480\" loading=\"lazy\"></figure>"), "{html}");
    assert!(html.contains("<div class=\"images\"><figure class=\"image\"><img class=\"image\" src=\"/files/f1/cat.png\" alt=\"a\""), "{html}");
    assert!(html.contains("<img class=\"image\" src=\"https://x.y/b.png\" alt=\"b\" loading=\"lazy\"></figure></div>"), "{html}");
}

/// Dense code (a token every few characters) stays within about ten times its size.
#[test]
fn highlighted_code_stays_small() {
    let body =
        "fn main() { let s = \"x\"; /* c */ for i in 0..10 { println!(\"{i}\"); } }\n".repeat(500);
    let html = render(&format!("```rust\n{body}```\n"));
    assert!(html.contains("hl-keyword"));
    assert!(
        html.len() < body.len() * 12,
        "{} for {}",
        html.len(),
        body.len()
    );
}

#[test]
fn colours_are_made_legible() {
    let white = [[0xff, 0xff, 0xff]];
    // Already legible: unchanged. Too light on white: darkened until it reads.
    assert_eq!(
        legible_hex("#1d2127", &white, 0).as_deref(),
        Some("#1d2127")
    );
    let darker = legible_hex("#7fb0ff", &white, 0).unwrap();
    assert_ne!(darker, "#7fb0ff");
    let byte = |i: usize| u8::from_str_radix(&darker[i..i + 2], 16).unwrap();
    assert!(super::highlight::contrast([byte(1), byte(3), byte(5)], white[0]) >= 4.5);
    assert_eq!(legible_hex("red", &white, 0), None);
    assert_eq!(legible_hex("#12345", &white, 0), None);
}

#[test]
fn raw_html_passes_through_the_allowlist() {
    // HTML the dialect has no node for is kept raw and shown as elements, never as text.
    let md = "<div align=\"center\"><p>A <mark style=\"color:red;\">red</mark> <kbd>Ctrl</kbd> <i class=\"fa-github\">:github:</i><br>line</p><a href=\"https://x.y/a\" class=\"button secondary\" data-extra=\"1\">Go</a></div>\n";
    let doc = markdown_to_document(md);
    assert!(crate::markdown::raw_text(doc.nodes[0].element().unwrap()).is_some());
    let html = render(md);
    assert_inert(&html);
    assert_eq!(
        html,
        "<div class=\"raw\"><div class=\"align-center\"><p>A <mark class=\"color-red\">red</mark> <kbd>Ctrl</kbd> <span class=\"icon\" data-icon=\"github\" aria-hidden=\"true\"></span><br>line</p><a href=\"https://x.y/a\" class=\"button button-secondary\" rel=\"noopener noreferrer\">Go</a></div></div>"
    );
    // Markdown kept raw is rendered as markdown; references resolve as elsewhere.
    let html = render("* a [link](/pages/p1) ![cat](/files/f1)\n*   b\n\n    <div data-gb-custom-block data-tag=\"hint\" data-style=\"success\" class=\"hint hint-success\"><p><strong>Tip</strong></p></div>\n");
    assert_inert(&html);
    assert!(
        html.contains("<a href=\"/docs/getting-started\">link</a>"),
        "{html}"
    );
    assert!(
        html.contains("<img src=\"/files/f1/cat.png\" alt=\"cat\" loading=\"lazy\">"),
        "{html}"
    );
    assert!(
        html.contains("<div class=\"hint hint-success\"><p><strong>Tip</strong></p></div>"),
        "{html}"
    );
    assert!(!html.contains("&lt;"), "{html}");
}

#[test]
fn raw_html_is_inert() {
    let hostile = [
        "<div><script>alert(1)</script><p>ok</p></div>",
        "<div><img src=x onerror=alert(1)><img src=\"javascript:alert(1)\" alt=\"\"></div>",
        "<div><a href=\"javascript:alert(1)\" onclick=\"x()\">a</a><a href=\"java&#9;script:alert(1)\">b</a></div>",
        "<div style=\"background:url(javascript:x)\"><iframe src=\"https://x.y\"></iframe><object data=\"x\"></object></div>",
        "<div><picture><source srcset=\"javascript:alert(1)\" media=\"(prefers-color-scheme: dark)\"><source srcset=\"a.png 1x, javascript:x 2x\" media=\"all\"><img src=\"data:image/png;base64,AA\" alt=\"\"></picture></div>",
        "<div><svg><script>alert(1)</script></svg><math><mi>x</mi></math><style>*{}</style><template><p>t</p></template></div>",
        "<div><!-- <script>alert(1)</script> --><p id=\"main\" class=\"evil\" title=\"&quot;><script>\">x</p></div>",
        "<div><form action=\"https://x.y\"><input value=\"x\"><button formaction=\"javascript:x\">b</button></form></div>",
        "<div><a href=\"data:text/html,x\">d</a><a href=\"vbscript:x\">v</a></div><noscript><p>n</p></noscript>",
        "<table><tr><td onmouseover=\"x\" colspan=\"2\" style=\"x\">c</td></tr></table><textarea><script>x</script></textarea>",
    ];
    for md in hostile {
        let html = render(md);
        assert_inert(&html);
        assert!(html.starts_with("<div class=\"raw\">"), "{md}: {html}");
        for bad in [
            "<script",
            "<iframe",
            "<object",
            "<svg",
            "<math",
            "<style",
            "<template",
            "<form",
            "<input",
            "<textarea",
            "<noscript",
            "onerror",
            "onclick",
            "onmouseover",
            "style=",
            "javascript:",
            "data:",
            "vbscript:",
            " id=",
            "evil",
            "formaction",
            "<!--",
        ] {
            assert!(!html.contains(bad), "{md}: {bad} in {html}");
        }
    }
    // What is kept of them.
    assert_eq!(
        render(hostile[0]),
        "<div class=\"raw\"><div><p>ok</p></div></div>"
    );
    assert_eq!(
        render(hostile[8]),
        "<div class=\"raw\"><div><a>d</a><a>v</a></div></div>"
    );
    assert!(render(hostile[9]).contains("<td colspan=\"2\">c</td>"));
}
