//! Token trees with their byte ranges in the source text. proc-macro2 gives positions only with
//! its `span-locations` feature, which, unified into every build of the workspace's tests,
//! would rebuild Burn and every proc macro a second time; the tokens are matched against the
//! text instead, which they came from.

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A token tree and where it is: `inner` holds a group's trees.
#[derive(Clone, Debug)]
pub struct Tok {
    pub tree: TokenTree,
    pub start: usize,
    pub end: usize,
    pub inner: Vec<Tok>,
}

impl Tok {
    pub fn is_punct(&self, c: char) -> bool {
        matches!(&self.tree, TokenTree::Punct(p) if p.as_char() == c)
    }

    pub fn ident(&self) -> Option<String> {
        match &self.tree {
            TokenTree::Ident(i) => Some(i.to_string()),
            _ => None,
        }
    }

    pub fn delimiter(&self) -> Option<Delimiter> {
        match &self.tree {
            TokenTree::Group(g) => Some(g.delimiter()),
            _ => None,
        }
    }
}

/// The file's token trees, located; `None` where it does not lex.
pub fn file(text: &str) -> Option<Vec<Tok>> {
    let stream: TokenStream = text.parse().ok()?;
    let mut at = 0;
    Some(align(text, &mut at, stream))
}

fn align(text: &str, at: &mut usize, stream: TokenStream) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut trees = stream.into_iter().peekable();
    while let Some(tree) = trees.next() {
        skip(text, at);
        let start = *at;
        // A doc comment is `#` (`!`) `[doc = ".."]` in the stream and one comment in the text.
        if let Some(len) = doc_comment(&text[start..]) {
            *at += len;
            let tok = |tree| Tok {
                tree,
                start,
                end: start + len,
                inner: Vec::new(),
            };
            out.push(tok(tree));
            if trees
                .peek()
                .is_some_and(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '!'))
            {
                out.push(tok(trees.next().unwrap()));
            }
            out.push(tok(trees.next().expect("a doc comment's attribute")));
            continue;
        }
        let inner = match &tree {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ('(', ')'),
                    Delimiter::Bracket => ('[', ']'),
                    Delimiter::Brace => ('{', '}'),
                    Delimiter::None => unreachable!("source text has no invisible groups"),
                };
                expect(text, at, open);
                let inner = align(text, at, group.stream());
                skip(text, at);
                expect(text, at, close);
                inner
            }
            leaf => {
                let written = leaf.to_string();
                assert!(
                    text[*at..].starts_with(&written),
                    "`{written}` expected at byte {at}: {:?}",
                    &text[*at..(*at + 40).min(text.len())]
                );
                *at += written.len();
                Vec::new()
            }
        };
        out.push(Tok {
            tree,
            start,
            end: *at,
            inner,
        });
    }
    out
}

fn expect(text: &str, at: &mut usize, c: char) {
    assert!(text[*at..].starts_with(c), "`{c}` expected at byte {at}");
    *at += 1;
}

/// Past whitespace and the comments that are not doc comments.
fn skip(text: &str, at: &mut usize) {
    loop {
        let rest = &text[*at..];
        let trimmed = rest.trim_start();
        *at += rest.len() - trimmed.len();
        if doc_comment(trimmed).is_some() {
            return;
        }
        if trimmed.starts_with("//") {
            *at += trimmed.find('\n').unwrap_or(trimmed.len());
        } else if trimmed.starts_with("/*") {
            *at += block_comment(trimmed);
        } else {
            return;
        }
    }
}

/// The length of the doc comment `text` starts with (`///`, `//!`, `/**`, `/*!`).
fn doc_comment(text: &str) -> Option<usize> {
    let line = (text.starts_with("///") && !text.starts_with("////")) || text.starts_with("//!");
    let block = (text.starts_with("/**") && !text.starts_with("/***") && !text.starts_with("/**/"))
        || text.starts_with("/*!");
    if line {
        Some(text.find('\n').unwrap_or(text.len()))
    } else if block {
        Some(block_comment(text))
    } else {
        None
    }
}

/// The length of the block comment `text` starts with; block comments nest.
fn block_comment(text: &str) -> usize {
    let mut depth = 0;
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with("/*") {
            depth += 1;
            i += 2;
        } else if text[i..].starts_with("*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += text[i..].chars().next().unwrap().len_utf8();
        }
    }
    text.len()
}
