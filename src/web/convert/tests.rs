//! HTML → Markdown and text on realistic pages (tests/fixtures/web), decoding, and the kinds of bodies.

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/fixtures/web/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn page(name: &str, format: Format) -> Converted {
    let bytes = fixture(name);
    let url = Url::parse("https://blog.example/posts/ownership/").unwrap();
    html(&decode(&bytes, Some("text/html"), true), &url, format)
}

#[test]
fn an_article_with_navigation_becomes_its_main_content_as_markdown() {
    let converted = page("article.html", Format::Markdown);
    assert_eq!(converted.title.as_deref(), Some("Understanding Ownership in Rust | The Systems Blog"));
    assert_eq!(
        converted.text,
        r#"# Understanding Ownership in Rust

By Ada Example on 3 February 2025

Ownership is the feature that makes Rust different from most languages you have used. Every value has a single owner, and when the owner goes out of scope the value is dropped. This post walks through what that means in practice, with examples you can paste into the [playground](https://play.rust-lang.org/).

## Moves

Assigning a heap-allocated value to another variable *moves* it. The original binding can no longer be used, and the compiler tells you so at compile time rather than letting you read freed memory at run time.

```rust
fn main() {
    let s1 = String::from("hello");
    let s2 = s1;
    // println!("{s1}"); // error[E0382]: borrow of moved value: `s1`
    println!("{s2}");
}
```

Types that implement `Copy`, such as integers, are copied instead of moved, because copying them is as cheap as moving them and there is no heap memory to free twice.

## Borrows

Most functions do not need to own their arguments. A reference lets them **borrow** a value for as long as the call lasts. You may have any number of shared references, or exactly one mutable reference, but never both at the same time.

- Shared references: `&T`, read only, many at once.
- Mutable references: `&mut T`, exclusive.

## Summary

| Rule | What the compiler checks |
| ---- | ------------------------ |
| One owner | Each value is dropped exactly once |
| Borrowing | References never outlive their referent |
| Aliasing XOR mutation | No data races in safe code |

Read the [follow-up post on lifetimes](https://blog.example/posts/lifetimes/) next."#
    );
}

#[test]
fn a_docs_page_keeps_its_table_its_code_blocks_and_its_list_numbering() {
    let converted = page("docs.html", Format::Markdown);
    assert_eq!(converted.title.as_deref(), Some("Configuration reference — widget 2.4 documentation"));
    assert_eq!(
        converted.text,
        r#"# Configuration reference

Widget reads its settings from `widget.toml` in the project root. Every key is optional; the defaults are shown below. See also the [TOML specification](https://toml.io/en/v1.0.0).

## Keys

| Key | Type | Default | Meaning |
| --- | ---- | ------- | ------- |
| `workers` | integer | 4 | Threads used for builds |
| `cache_dir` | path | .widget | Where artefacts are kept |
| `mode` | string | fast | One of fast \| thorough |

## Example

A complete file:

```
[build]
workers = 8
mode = "thorough"
```

Load it from Python:

```python
import widget

config = widget.load("widget.toml")
print(config.workers)
```

3. Run `widget check`.
4. Fix what it reports."#
    );
}

#[test]
fn a_page_without_a_main_element_goes_through_readability_and_loses_its_chrome() {
    let converted = page("news.html", Format::Markdown);
    assert_eq!(
        converted.title.as_deref(),
        Some("City council approves new bike lanes"),
        "the site name goes"
    );
    assert_eq!(
        converted.text,
        "The city council voted 7 to 2 on Tuesday to build twelve kilometres of protected bike lanes along the river, the largest expansion of the network since it opened. Construction starts in the spring and should take two years.\n\nSupporters said the lanes would cut traffic and make the riverside safer for children cycling to school. Opponents worried about the loss of 300 parking spaces and asked for a study of the effect on local shops and the riverside café.\n\nThe plan costs €14 million, of which the regional government pays half. The council will publish the detailed route on its [website](https://blog.example/council/bike-plan) next month, followed by a public consultation.\n\n\"This is the most important decision on transport we have made in a decade,\" said the mayor, who has promised to finish the network before the next election."
    );
}

#[test]
fn text_format_strips_the_tags_and_keeps_the_content() {
    let text = page("article.html", Format::Text).text;
    assert!(
        text.starts_with(
            "Understanding Ownership in Rust\n\nBy Ada Example on 3 February 2025\n\nOwnership is"
        ),
        "{text}"
    );
    assert!(text.contains("fn main() {\n    let s1 = String::from(\"hello\");"), "{text}");
    assert!(text.contains("One owner Each value is dropped exactly once"), "{text}");
    for gone in ["<", "Popular posts", "Subscribe", "gtag", "font-family", "Privacy", "12 comments"] {
        assert!(!text.contains(gone), "{gone:?} in {text}");
    }
    let news = page("news.html", Format::Text).text;
    assert!(news.starts_with("The city council voted 7 to 2"), "{news}");
    assert!(!news.contains("Trending") && !news.contains("Copyright"), "{news}");
}

#[test]
fn a_page_with_no_main_content_is_converted_whole_without_navigation() {
    let url = Url::parse("https://files.example/pub/").unwrap();
    let source = "<html><head><title>Index of /pub</title><script>x()</script></head><body><nav><a href=\"/\">Home</a></nav><h1>Index of /pub</h1><pre><a href=\"a.tar.gz\">a.tar.gz</a>\n<a href=\"b.zip\">b.zip</a></pre><footer>server 1.0</footer></body></html>";
    let converted = html(source, &url, Format::Markdown);
    assert_eq!(converted.title.as_deref(), Some("Index of /pub"));
    assert!(!converted.text.contains("Home") && !converted.text.contains("server 1.0"), "{}", converted.text);
    assert!(converted.text.contains("a.tar.gz") && converted.text.contains("b.zip"), "{}", converted.text);
    assert_eq!(html(source, &url, Format::Html).text, source, "html is the page as is");
    assert_eq!(html("", &url, Format::Markdown), Converted { title: None, text: String::new() });
}

#[test]
fn bodies_are_decoded_by_bom_then_declared_charset_then_meta_then_utf8() {
    let latin1 = b"caf\xe9";
    assert_eq!(decode(latin1, Some("text/plain; charset=ISO-8859-1"), false), "café");
    assert_eq!(decode(latin1, Some("text/plain; charset=\"latin1\""), false), "café");
    assert_eq!(decode(latin1, Some("text/plain"), false), "caf\u{fffd}", "UTF-8 by default");
    let meta = b"<html><head><meta charset=\"windows-1252\"></head><body>\x80</body></html>";
    assert!(decode(meta, Some("text/html"), true).contains("<body>€</body>"));
    assert!(
        decode(meta, Some("text/html; charset=utf-8"), true).contains("<body>\u{fffd}</body>"),
        "the header wins"
    );
    let http_equiv = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\">\xe9";
    assert!(decode(http_equiv, None, true).ends_with('é'));
    assert_eq!(
        decode(b"\xef\xbb\xbfhi \xe2\x9c\x93", Some("text/plain; charset=latin1"), false),
        "hi ✓",
        "a BOM wins"
    );
    assert_eq!(decode("é".as_bytes().split_at(1).0, None, false), "\u{fffd}", "a cut character is replaced");
}

#[test]
fn the_kind_of_body_comes_from_its_type_or_is_sniffed() {
    assert_eq!(Body::of(Some("text/html; charset=utf-8"), b""), Body::Html);
    assert_eq!(Body::of(Some("application/xhtml+xml"), b""), Body::Html);
    assert_eq!(Body::of(Some("application/json"), b"{}"), Body::Text);
    assert_eq!(Body::of(Some("application/vnd.api+json"), b"{}"), Body::Text);
    assert_eq!(Body::of(Some("image/svg+xml"), b"<svg/>"), Body::Text);
    assert_eq!(Body::of(Some("text/x-rust"), b"fn main() {}"), Body::Text);
    assert_eq!(Body::of(Some("IMAGE/PNG"), b"\x89PNG"), Body::Image("image/png"));
    assert_eq!(Body::of(Some("image/jpg"), b""), Body::Image("image/jpeg"));
    assert_eq!(Body::of(Some("image/tiff"), b""), Body::Binary);
    assert_eq!(Body::of(Some("application/pdf"), b"%PDF-1.7"), Body::Binary);
    assert_eq!(Body::of(None, b"  <!DOCTYPE html><html>"), Body::Html);
    assert_eq!(Body::of(Some("application/octet-stream"), b"\xef\xbb\xbf<html lang=en>"), Body::Html);
    assert_eq!(Body::of(None, b"plain words"), Body::Text);
    assert_eq!(Body::of(None, b"\x00\x01\x02binary"), Body::Binary);
    assert_eq!(Body::of(None, b"\xff\xfe\xfd"), Body::Binary);
    assert!(
        Body::worth_reading(None)
            && Body::worth_reading(Some("text/css"))
            && Body::worth_reading(Some("image/gif"))
    );
    assert!(!Body::worth_reading(Some("application/zip")) && !Body::worth_reading(Some("video/mp4")));
}

#[test]
fn formats_parse_case_insensitively() {
    assert_eq!(Format::parse(" Markdown "), Some(Format::Markdown));
    assert_eq!(Format::parse("md"), Some(Format::Markdown));
    assert_eq!(Format::parse("TEXT"), Some(Format::Text));
    assert_eq!(Format::parse("html"), Some(Format::Html));
    assert_eq!(Format::parse("pdf"), None);
}

#[test]
fn the_main_content_is_the_only_article_else_the_only_main_and_only_its_links_become_absolute() {
    let url = Url::parse("https://site.example/docs/page").unwrap();
    // Two articles: neither is the main content; the one `role=main` element is, and the title comes from
    // `<head>`, not from an SVG title in the body.
    let page = r#"<html><head><title>Docs | Site</title></head><body>
        <nav><a href="/home">Home</a></nav>
        <div role="main"><svg><title>icon</title></svg>
          <article><p>First <a href="one">one</a></p></article>
          <article><p>Second <img src="../img/two.png" alt="two"></p></article>
        </div>
        <footer><a href="/legal">Legal</a></footer></body></html>"#;
    let converted = html(page, &url, Format::Markdown);
    assert_eq!(converted.title.as_deref(), Some("Docs | Site"));
    assert_eq!(
        converted.text,
        "First [one](https://site.example/docs/one)\n\nSecond ![two](https://site.example/img/two.png)"
    );
    // One article wins over a main element around it.
    let page = r#"<html><head><title>T</title></head><body><main><p>Intro <a href="x">x</a></p>
        <article><p>Body <a href="y">y</a></p></article></main></body></html>"#;
    assert_eq!(html(page, &url, Format::Markdown).text, "Body [y](https://site.example/docs/y)");
}
