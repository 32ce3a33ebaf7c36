//! Visibility conditions of docs sites (adaptive content).
//!
//! Site spaces, site sections and pages may carry a `condition`: an expression over the
//! visitor's claims, written in a small subset of JavaScript expressions, such as
//! `visitor.claims.unsigned.beta === true && !visitor.claims.isInternal`. This module parses
//! such a condition ([`parse`], [`parse_condition`]), prints it back in a canonical form
//! (the [`Display`](fmt::Display) impl of [`Expr`]) and evaluates it against a JSON context
//! with JavaScript semantics ([`evaluate`], [`evaluate_value`]).
//!
//! The language:
//!
//! * literals `true`, `false`, `null`, `undefined`, decimal numbers (a `-` is allowed right
//!   before a number), strings in single or double quotes, array literals `[a, b]`;
//! * the root names `visitor`, `space` and `page`, and nothing else;
//! * member access `a.b`, `a?.b`, `a["b"]`, `a?.["b"]`, `a[0]`, `a[expr]`, and `.length`;
//! * the method calls `.includes(x)` (arrays and strings), `.startsWith(x)` and
//!   `.endsWith(x)` (strings), also after `?.`;
//! * `!`, `<` `<=` `>` `>=` `in`, `===` `!==` `==` `!=`, `&&`, `||`, `??` and `c ? a : b`
//!   with JavaScript's precedence, and parentheses. As in JavaScript, `??` cannot be mixed
//!   with `&&` or `||` without parentheses.
//!
//! Input is bounded: at most [`MAX_CONDITION_LEN`] characters, and sub-expressions nest at
//! most [`MAX_CONDITION_DEPTH`] levels, so the recursive parser, printer and evaluator run
//! in a small, fixed amount of stack. Evaluation is total: what would throw in JavaScript
//! (reading a property of `undefined`, `in` on a string…) makes the condition false.
//!
//! Only own properties of the context's objects are visible (and `length` of strings and
//! arrays): prototype members such as `toString` read as `undefined`, and `in` tests own keys.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value as Json};

/// Longest condition accepted, in characters.
pub const MAX_CONDITION_LEN: usize = 1024;

/// Deepest nesting of sub-expressions accepted (parentheses, `!`, arrays, operators…).
pub const MAX_CONDITION_DEPTH: usize = 32;

// ---------------------------------------------------------------------------------------
// The syntax tree.

/// A parsed condition.
///
/// Trees produced by [`parse`] are canonical: a chain's base is never a chain without
/// optional links (it is merged into the outer chain), a chain has at least one link, a
/// computed key that is a string or number literal is stored as [`Step::Key`], and the
/// operands of `&&`, `||` and `??` are never of the same operator (they are flattened).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `undefined`.
    Undefined,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A finite number literal (possibly negative).
    Number(f64),
    /// A string literal.
    String(String),
    /// An array literal.
    Array(Vec<Expr>),
    /// One of the context's roots: `visitor`, `space` or `page`.
    Root(Root),
    /// A member or method chain: `base.a?.b[0].includes(x)`.
    Chain {
        /// What the chain starts from.
        base: Box<Expr>,
        /// The accesses and calls, in order (at least one).
        links: Vec<Link>,
    },
    /// `!operand`.
    Not(Box<Expr>),
    /// A comparison: equality, relational or `in`.
    Compare {
        /// The operator.
        op: CompareOp,
        /// Left operand.
        left: Box<Expr>,
        /// Right operand.
        right: Box<Expr>,
    },
    /// `a && b && …`, `a || b || …` or `a ?? b ?? …` (at least two operands).
    Logical {
        /// The operator.
        op: LogicalOp,
        /// The operands, in order.
        operands: Vec<Expr>,
    },
    /// `test ? then : otherwise`.
    Conditional {
        /// The condition.
        test: Box<Expr>,
        /// Value when the test is truthy.
        then: Box<Expr>,
        /// Value when the test is falsy.
        otherwise: Box<Expr>,
    },
}

/// A root name of the context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Root {
    /// `visitor`: the visitor's claims.
    Visitor,
    /// `space`: the space being shown.
    Space,
    /// `page`: the page being shown.
    Page,
}

impl Root {
    /// The name as written in conditions (and the key in the context object).
    pub fn name(self) -> &'static str {
        match self {
            Root::Visitor => "visitor",
            Root::Space => "space",
            Root::Page => "page",
        }
    }
}

/// One link of a [`Expr::Chain`].
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// Written with `?.`: a `null` or `undefined` before it ends the whole chain with
    /// `undefined`.
    pub optional: bool,
    /// What the link does.
    pub step: Step,
}

/// What a [`Link`] does.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Reads a property by name: `.name` or `["name"]` or `[0]`.
    Key(String),
    /// Reads a property whose name is computed: `[expr]`.
    Index(Box<Expr>),
    /// Calls a method with one argument.
    Call {
        /// The method.
        method: Method,
        /// The argument.
        argument: Box<Expr>,
    },
}

/// The methods a condition may call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// `includes`, on arrays (SameValueZero) and strings.
    Includes,
    /// `startsWith`, on strings.
    StartsWith,
    /// `endsWith`, on strings.
    EndsWith,
}

impl Method {
    /// The method's name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Includes => "includes",
            Method::StartsWith => "startsWith",
            Method::EndsWith => "endsWith",
        }
    }

    fn from_name(name: &str) -> Option<Method> {
        match name {
            "includes" => Some(Method::Includes),
            "startsWith" => Some(Method::StartsWith),
            "endsWith" => Some(Method::EndsWith),
            _ => None,
        }
    }
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// `===`
    StrictEq,
    /// `!==`
    StrictNe,
    /// `==`
    LooseEq,
    /// `!=`
    LooseNe,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `in`
    In,
}

impl CompareOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::StrictEq => "===",
            CompareOp::StrictNe => "!==",
            CompareOp::LooseEq => "==",
            CompareOp::LooseNe => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
            CompareOp::In => "in",
        }
    }

    /// Whether this is an equality operator (lower precedence than the relational ones).
    pub fn is_equality(self) -> bool {
        matches!(
            self,
            CompareOp::StrictEq | CompareOp::StrictNe | CompareOp::LooseEq | CompareOp::LooseNe
        )
    }
}

/// Short-circuiting operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogicalOp {
    /// `&&`
    And,
    /// `||`
    Or,
    /// `??`
    Coalesce,
}

impl LogicalOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            LogicalOp::And => "&&",
            LogicalOp::Or => "||",
            LogicalOp::Coalesce => "??",
        }
    }
}

/// A condition that cannot be accepted, with where the problem is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} at position {position}")]
pub struct ConditionError {
    /// 1-based character column of the problem (one past the end for a truncated input).
    pub position: usize,
    /// What is wrong.
    pub message: String,
}

fn error(position: usize, message: impl Into<String>) -> ConditionError {
    ConditionError {
        position,
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------------------
// Lexing.

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Punct(&'static str),
    End,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    /// 1-based character column.
    pos: usize,
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Num(_) => "a number".into(),
        Tok::Str(_) => "a string".into(),
        Tok::Ident(name) => format!("`{name}`"),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::End => "the end of the condition".into(),
    }
}

fn describe_char(c: char) -> String {
    if c.is_control() || c.is_whitespace() {
        format!("U+{:04X}", c as u32)
    } else {
        format!("`{c}`")
    }
}

/// JavaScript white space and line terminators (approximately).
fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$' || (!c.is_ascii() && c.is_alphabetic())
}

fn is_ident_part(c: char) -> bool {
    is_ident_start(c) || c.is_ascii_digit() || (!c.is_ascii() && c.is_alphanumeric())
}

fn lex(chars: &[char]) -> Result<Vec<Token>, ConditionError> {
    let mut out = Vec::new();
    let mut i = 0;
    let at = |k: usize| chars.get(k).copied();
    while i < chars.len() {
        let c = chars[i];
        let pos = i + 1;
        if is_space(c) {
            i += 1;
            continue;
        }
        if c == '"' || c == '\'' {
            let (s, next) = lex_string(chars, i)?;
            out.push(Token {
                tok: Tok::Str(s),
                pos,
            });
            i = next;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let (n, next) = lex_number(chars, i)?;
            out.push(Token {
                tok: Tok::Num(n),
                pos,
            });
            i = next;
            continue;
        }
        if is_ident_start(c) {
            let mut j = i + 1;
            while at(j).is_some_and(is_ident_part) {
                j += 1;
            }
            out.push(Token {
                tok: Tok::Ident(chars[i..j].iter().collect()),
                pos,
            });
            i = j;
            continue;
        }
        let next_is = |k: usize, want: char| at(i + k) == Some(want);
        let (p, len): (&'static str, usize) = match c {
            '(' => ("(", 1),
            ')' => (")", 1),
            '[' => ("[", 1),
            ']' => ("]", 1),
            ',' => (",", 1),
            ':' => (":", 1),
            '.' => (".", 1),
            '-' => ("-", 1),
            '?' => {
                if next_is(1, '.') && !at(i + 2).is_some_and(|d| d.is_ascii_digit()) {
                    ("?.", 2)
                } else if next_is(1, '?') {
                    ("??", 2)
                } else {
                    ("?", 1)
                }
            }
            '!' => match (next_is(1, '='), next_is(2, '=')) {
                (true, true) => ("!==", 3),
                (true, false) => ("!=", 2),
                _ => ("!", 1),
            },
            '=' => match (next_is(1, '='), next_is(2, '=')) {
                (true, true) => ("===", 3),
                (true, false) => ("==", 2),
                _ => return Err(error(pos, "unexpected `=`; compare with `===`")),
            },
            '<' if next_is(1, '=') => ("<=", 2),
            '<' => ("<", 1),
            '>' if next_is(1, '=') => (">=", 2),
            '>' => (">", 1),
            '&' if next_is(1, '&') => ("&&", 2),
            '&' => return Err(error(pos, "unexpected `&`; did you mean `&&`?")),
            '|' if next_is(1, '|') => ("||", 2),
            '|' => return Err(error(pos, "unexpected `|`; did you mean `||`?")),
            _ => {
                return Err(error(
                    pos,
                    format!("unexpected character {}", describe_char(c)),
                ))
            }
        };
        out.push(Token {
            tok: Tok::Punct(p),
            pos,
        });
        i += len;
    }
    out.push(Token {
        tok: Tok::End,
        pos: chars.len() + 1,
    });
    Ok(out)
}

/// Lexes the string literal whose opening quote is at `chars[start]`; returns its value
/// and the index after the closing quote.
fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), ConditionError> {
    let quote = chars[start];
    let unterminated = || error(start + 1, "unterminated string");
    let mut s = String::new();
    let mut i = start + 1;
    loop {
        let c = *chars.get(i).ok_or_else(unterminated)?;
        match c {
            '\n' | '\r' => return Err(unterminated()),
            '\\' => {
                let e = *chars.get(i + 1).ok_or_else(unterminated)?;
                i += 2;
                match e {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    'r' => s.push('\r'),
                    'b' => s.push('\u{8}'),
                    'f' => s.push('\u{c}'),
                    'v' => s.push('\u{b}'),
                    '\\' | '\'' | '"' | '/' => s.push(e),
                    '0' if !chars.get(i).is_some_and(|d| d.is_ascii_digit()) => s.push('\0'),
                    'u' => {
                        let (ch, next) = lex_unicode_escape(chars, i - 2)?;
                        s.push(ch);
                        i = next;
                    }
                    _ => return Err(error(i - 1, format!("unknown escape `\\{e}` in string"))),
                }
            }
            c if c == quote => return Ok((s, i + 1)),
            c => {
                s.push(c);
                i += 1;
            }
        }
    }
}

/// Reads `\uXXXX` or `\u{X…}` at `chars[backslash]`: one code unit or code point. Returns
/// the code unit and the index after it.
fn read_code_unit(chars: &[char], backslash: usize) -> Result<(u32, usize), ConditionError> {
    let bad = || error(backslash + 1, "invalid `\\u` escape in string");
    if chars.get(backslash) != Some(&'\\') || chars.get(backslash + 1) != Some(&'u') {
        return Err(bad());
    }
    let mut i = backslash + 2;
    if chars.get(i) == Some(&'{') {
        i += 1;
        let mut value: u32 = 0;
        let mut digits = 0;
        while let Some(d) = chars.get(i).and_then(|c| c.to_digit(16)) {
            value = value.saturating_mul(16).saturating_add(d);
            digits += 1;
            i += 1;
        }
        if digits == 0 || chars.get(i) != Some(&'}') || value > 0x10FFFF {
            return Err(bad());
        }
        Ok((value, i + 1))
    } else {
        let mut value = 0;
        for _ in 0..4 {
            let d = chars.get(i).and_then(|c| c.to_digit(16)).ok_or_else(bad)?;
            value = value * 16 + d;
            i += 1;
        }
        Ok((value, i))
    }
}

fn lex_unicode_escape(chars: &[char], backslash: usize) -> Result<(char, usize), ConditionError> {
    let lone = || {
        error(
            backslash + 1,
            "lone surrogate in `\\u` escape (conditions hold only well-formed text)",
        )
    };
    let (unit, next) = read_code_unit(chars, backslash)?;
    match unit {
        0xD800..=0xDBFF => {
            let (low, after) = read_code_unit(chars, next).map_err(|_| lone())?;
            if !(0xDC00..=0xDFFF).contains(&low) {
                return Err(lone());
            }
            let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
            Ok((char::from_u32(c).ok_or_else(lone)?, after))
        }
        0xDC00..=0xDFFF => Err(lone()),
        _ => Ok((char::from_u32(unit).ok_or_else(lone)?, next)),
    }
}

/// Value of the decimal literal with these parts (`int` and `frac` digits, `exp` an
/// optionally signed exponent); empty parts count as zero.
fn decimal_value(int: &str, frac: &str, exp: &str) -> f64 {
    let or_zero = |s: &str| {
        if s.is_empty() {
            "0".to_string()
        } else {
            s.to_string()
        }
    };
    let text = format!(
        "{}.{}e{}",
        or_zero(int),
        or_zero(frac),
        or_zero(exp.trim_start_matches('+'))
    );
    text.parse().unwrap_or(f64::NAN)
}

fn lex_number(chars: &[char], start: usize) -> Result<(f64, usize), ConditionError> {
    let digits_from = |mut i: usize| {
        let from = i;
        while chars.get(i).is_some_and(|d| d.is_ascii_digit()) {
            i += 1;
        }
        (chars[from..i].iter().collect::<String>(), i)
    };
    let (int, mut i) = digits_from(start);
    if int.len() > 1 && int.starts_with('0') {
        return Err(error(
            start + 1,
            "numbers may not start with `0` (leading zero)",
        ));
    }
    let mut frac = String::new();
    if chars.get(i) == Some(&'.') {
        (frac, i) = digits_from(i + 1);
    }
    let mut exp = String::new();
    if matches!(chars.get(i), Some('e' | 'E')) {
        i += 1;
        if let Some(sign @ ('+' | '-')) = chars.get(i) {
            exp.push(*sign);
            i += 1;
        }
        let (digits, next) = digits_from(i);
        if digits.is_empty() {
            return Err(error(i + 1, "expected digits in the number's exponent"));
        }
        exp.push_str(&digits);
        i = next;
    }
    if let Some(&c) = chars.get(i) {
        if is_ident_part(c) {
            return Err(error(
                i + 1,
                format!("unexpected {} right after a number", describe_char(c)),
            ));
        }
    }
    let value = decimal_value(&int, &frac, &exp);
    if !value.is_finite() {
        return Err(error(start + 1, "number is too large"));
    }
    Ok((value, i))
}

// ---------------------------------------------------------------------------------------
// Parsing.
//
// A recursive descent whose recursion is bounded by MAX_CONDITION_DEPTH, and whose frames
// are kept small so that the deepest accepted input parses in a small stack even without
// optimisations: parsed sub-expressions go to a heap stack (`Parser::nodes`) instead of
// being returned by value, the error is stored in the parser (functions return the
// zero-sized `Failed`), and building nodes and errors happens in non-recursive helpers.

/// Static type of a sub-expression, for the "must yield a boolean" check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Bool,
    Number,
    String,
    Null,
    Undefined,
    Array,
    Unknown,
}

impl Ty {
    fn describe(self) -> &'static str {
        match self {
            Ty::Bool => "a boolean",
            Ty::Number => "a number",
            Ty::String => "a string",
            Ty::Null => "null",
            Ty::Undefined => "undefined",
            Ty::Array => "an array",
            Ty::Unknown => "a value of unknown type",
        }
    }
}

/// Whether an expression may yield a boolean: `Err` holds where it starts and what it
/// yields instead.
type Yields = Result<(), (usize, Ty)>;

fn yields_of(ty: Ty, start: usize) -> Yields {
    match ty {
        Ty::Bool | Ty::Unknown => Ok(()),
        other => Err((start, other)),
    }
}

/// A parsed sub-expression with what the parser knows about it.
struct Node {
    expr: Expr,
    /// Height of the tree (a leaf is 1).
    height: usize,
    ty: Ty,
    start: usize,
    yields: Yields,
}

impl Node {
    fn leaf(expr: Expr, ty: Ty, start: usize) -> Node {
        Node {
            expr,
            height: 1,
            ty,
            start,
            yields: yields_of(ty, start),
        }
    }
}

#[derive(Clone, Copy)]
enum BinOp {
    Logical(LogicalOp),
    Compare(CompareOp),
}

impl BinOp {
    fn precedence(self) -> u8 {
        match self {
            BinOp::Logical(LogicalOp::Or | LogicalOp::Coalesce) => 1,
            BinOp::Logical(LogicalOp::And) => 2,
            BinOp::Compare(op) if op.is_equality() => 3,
            BinOp::Compare(_) => 4,
        }
    }
}

/// A chain being parsed.
struct ChainBuilder {
    base: Expr,
    base_ty: Ty,
    links: Vec<Link>,
    /// Height of the tallest child (base, computed keys, arguments).
    inner: usize,
    start: usize,
}

/// Parsing failed; the error is in [`Parser::error`].
struct Failed;

type Parsed = Result<(), Failed>;

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    nesting: usize,
    nodes: Vec<Node>,
    ops: Vec<(BinOp, usize)>,
    bangs: Vec<usize>,
    chains: Vec<ChainBuilder>,
    error: Option<ConditionError>,
}

fn too_deep(position: usize) -> ConditionError {
    error(
        position,
        format!("condition is nested too deeply (at most {MAX_CONDITION_DEPTH} levels)"),
    )
}

impl Parser {
    fn new(tokens: Vec<Token>) -> Parser {
        Parser {
            tokens,
            at: 0,
            nesting: 0,
            nodes: Vec::new(),
            ops: Vec::new(),
            bangs: Vec::new(),
            chains: Vec::new(),
            error: None,
        }
    }

    // Tokens.

    fn peek(&self) -> &Token {
        &self.tokens[self.at]
    }

    fn pos(&self) -> usize {
        self.peek().pos
    }

    /// Moves past the current token (never past the end) and returns its position.
    fn bump(&mut self) -> usize {
        let pos = self.pos();
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        pos
    }

    fn is(&self, punct: &str) -> bool {
        matches!(self.peek().tok, Tok::Punct(p) if p == punct)
    }

    fn at_postfix(&self) -> bool {
        self.is(".") || self.is("?.") || self.is("[") || self.is("(")
    }

    fn peek_binary(&self) -> Option<BinOp> {
        Some(match &self.peek().tok {
            Tok::Punct("&&") => BinOp::Logical(LogicalOp::And),
            Tok::Punct("||") => BinOp::Logical(LogicalOp::Or),
            Tok::Punct("??") => BinOp::Logical(LogicalOp::Coalesce),
            Tok::Punct("===") => BinOp::Compare(CompareOp::StrictEq),
            Tok::Punct("!==") => BinOp::Compare(CompareOp::StrictNe),
            Tok::Punct("==") => BinOp::Compare(CompareOp::LooseEq),
            Tok::Punct("!=") => BinOp::Compare(CompareOp::LooseNe),
            Tok::Punct("<") => BinOp::Compare(CompareOp::Lt),
            Tok::Punct("<=") => BinOp::Compare(CompareOp::Le),
            Tok::Punct(">") => BinOp::Compare(CompareOp::Gt),
            Tok::Punct(">=") => BinOp::Compare(CompareOp::Ge),
            Tok::Ident(name) if name == "in" => BinOp::Compare(CompareOp::In),
            _ => return None,
        })
    }

    // Errors.

    fn fail(&mut self, error: ConditionError) -> Failed {
        self.error.get_or_insert(error);
        Failed
    }

    fn fail_at(&mut self, position: usize, message: &str) -> Failed {
        self.fail(error(position, message))
    }

    /// Fails on the current token, where `expected` was expected.
    fn fail_unexpected(&mut self, expected: &str) -> Failed {
        let token = self.peek();
        let error = match &token.tok {
            Tok::End => error(
                token.pos,
                format!("unexpected end of condition, expected {expected}"),
            ),
            other => error(
                token.pos,
                format!("expected {expected}, found {}", describe(other)),
            ),
        };
        self.fail(error)
    }

    fn expect(&mut self, punct: &'static str) -> Parsed {
        if self.is(punct) {
            self.bump();
            Ok(())
        } else {
            Err(self.fail_unexpected(&format!("`{punct}`")))
        }
    }

    fn enter(&mut self, position: usize) -> Parsed {
        self.nesting += 1;
        if self.nesting > MAX_CONDITION_DEPTH {
            return Err(self.fail(too_deep(position)));
        }
        Ok(())
    }

    fn check_height(&mut self, height: usize, position: usize) -> Parsed {
        if height > MAX_CONDITION_DEPTH {
            return Err(self.fail(too_deep(position)));
        }
        Ok(())
    }

    // The node stack.

    fn pop(&mut self) -> Node {
        self.nodes
            .pop()
            .unwrap_or_else(|| Node::leaf(Expr::Undefined, Ty::Undefined, 1))
    }

    fn push(&mut self, node: Node) -> Parsed {
        self.check_height(node.height, node.start)?;
        self.nodes.push(node);
        Ok(())
    }

    // The grammar. Each function leaves one node on the stack when it succeeds.

    /// A full expression, including the conditional operator: one nesting level.
    fn parse_expr(&mut self) -> Parsed {
        let start = self.pos();
        self.enter(start)?;
        self.parse_binary()?;
        if self.is("?") {
            let question = self.bump();
            self.parse_expr()?;
            self.expect(":")?;
            self.parse_expr()?;
            self.finish_conditional(question)?;
        }
        self.nesting -= 1;
        Ok(())
    }

    fn finish_conditional(&mut self, question: usize) -> Parsed {
        let otherwise = self.pop();
        let then = self.pop();
        let test = self.pop();
        let height = 1 + test.height.max(then.height).max(otherwise.height);
        self.check_height(height, question)?;
        self.push(Node {
            yields: then.yields.and(otherwise.yields),
            expr: Expr::Conditional {
                test: Box::new(test.expr),
                then: Box::new(then.expr),
                otherwise: Box::new(otherwise.expr),
            },
            height,
            ty: Ty::Unknown,
            start: test.start,
        })
    }

    /// Operands joined by binary operators, by precedence climbing over an explicit
    /// operator stack (no recursion per operator).
    fn parse_binary(&mut self) -> Parsed {
        let base = self.ops.len();
        let mut seen = [false; 2];
        self.parse_unary()?;
        while let Some(op) = self.peek_binary() {
            let pos = self.bump();
            self.check_mixing(op, pos, &mut seen)?;
            while self.ops.len() > base
                && self.ops[self.ops.len() - 1].0.precedence() >= op.precedence()
            {
                self.reduce()?;
            }
            self.ops.push((op, pos));
            self.parse_unary()?;
        }
        while self.ops.len() > base {
            self.reduce()?;
        }
        Ok(())
    }

    /// `??` cannot be mixed with `&&` or `||` without parentheses: `seen` records whether
    /// this sequence had a `??` and whether it had `&&` or `||`.
    fn check_mixing(&mut self, op: BinOp, pos: usize, seen: &mut [bool; 2]) -> Parsed {
        match op {
            BinOp::Logical(LogicalOp::Coalesce) => seen[0] = true,
            BinOp::Logical(_) => seen[1] = true,
            BinOp::Compare(_) => {}
        }
        if seen[0] && seen[1] {
            return Err(self.fail_at(
                pos,
                "`??` cannot be mixed with `&&` or `||` without parentheses",
            ));
        }
        Ok(())
    }

    /// Applies the operator on top of the operator stack to the top two nodes.
    fn reduce(&mut self) -> Parsed {
        let Some((op, pos)) = self.ops.pop() else {
            return Ok(());
        };
        let right = self.pop();
        let left = self.pop();
        let start = left.start;
        let node = match op {
            BinOp::Compare(op) => {
                let height = 1 + left.height.max(right.height);
                self.check_height(height, pos)?;
                Node {
                    expr: Expr::Compare {
                        op,
                        left: Box::new(left.expr),
                        right: Box::new(right.expr),
                    },
                    height,
                    ty: Ty::Bool,
                    start,
                    yields: Ok(()),
                }
            }
            BinOp::Logical(op) => {
                let yields = if left.yields.is_ok() || right.yields.is_ok() {
                    Ok(())
                } else {
                    left.yields
                };
                // `a || (b || c)` is `a || b || c`: operands of the same operator merge.
                let mut inner = 0;
                let mut flat = Vec::new();
                for side in [left, right] {
                    match side.expr {
                        Expr::Logical {
                            op: side_op,
                            operands,
                        } if side_op == op => {
                            inner = inner.max(side.height - 1);
                            flat.extend(operands);
                        }
                        other => {
                            inner = inner.max(side.height);
                            flat.push(other);
                        }
                    }
                }
                let height = inner + 1;
                self.check_height(height, pos)?;
                Node {
                    expr: Expr::Logical { op, operands: flat },
                    height,
                    ty: Ty::Unknown,
                    start,
                    yields,
                }
            }
        };
        self.push(node)
    }

    /// `!`s (counted in a loop, each one nesting level), then a negative number or a
    /// chain.
    fn parse_unary(&mut self) -> Parsed {
        let mut bangs = 0;
        while self.is("!") {
            let pos = self.bump();
            self.enter(pos)?;
            self.bangs.push(pos);
            bangs += 1;
        }
        if self.is("-") {
            self.parse_negative()?;
        } else {
            self.parse_postfix()?;
        }
        for _ in 0..bangs {
            self.wrap_not()?;
        }
        self.nesting -= bangs;
        Ok(())
    }

    fn wrap_not(&mut self) -> Parsed {
        let pos = self.bangs.pop().unwrap_or(1);
        let operand = self.pop();
        self.push(Node {
            expr: Expr::Not(Box::new(operand.expr)),
            height: operand.height + 1,
            ty: Ty::Bool,
            start: pos,
            yields: Ok(()),
        })
    }

    /// `-` and a number literal (the only use of `-` in conditions).
    fn parse_negative(&mut self) -> Parsed {
        let pos = self.bump();
        let Tok::Num(n) = self.peek().tok else {
            return Err(self.fail_unexpected("a number after `-`"));
        };
        self.bump();
        self.push(Node::leaf(Expr::Number(-n), Ty::Number, pos))
    }

    /// A primary followed by member accesses and method calls.
    fn parse_postfix(&mut self) -> Parsed {
        self.parse_primary()?;
        if !self.at_postfix() {
            return Ok(());
        }
        self.begin_chain();
        loop {
            let pos = self.pos();
            if self.is(".") {
                self.bump();
                self.parse_named_step(false)?;
            } else if self.is("?.") {
                self.bump();
                if self.is("[") {
                    self.parse_index_step(true)?;
                } else if self.is("(") {
                    return Err(self.fail_unexpected("a property name after `?.`"));
                } else {
                    self.parse_named_step(true)?;
                }
            } else if self.is("[") {
                self.parse_index_step(false)?;
            } else if self.is("(") {
                return Err(self.fail_at(
                    pos,
                    "only the methods `includes`, `startsWith` and `endsWith` can be called",
                ));
            } else {
                break;
            }
            let inner = self.chains.last().map_or(0, |chain| chain.inner);
            self.check_height(inner + 1, pos)?;
        }
        self.finish_chain()
    }

    /// Starts a chain on the node on top of the stack. `(a.b).c` is `a.b.c`: only a chain
    /// with `?.` keeps its parentheses (they stop the short-circuit).
    fn begin_chain(&mut self) {
        let primary = self.pop();
        let base_ty = primary.ty;
        let start = primary.start;
        let chain = match primary.expr {
            Expr::Chain { base, links } if !links.iter().any(|l| l.optional) => ChainBuilder {
                base: *base,
                base_ty,
                links,
                inner: primary.height - 1,
                start,
            },
            other => ChainBuilder {
                base: other,
                base_ty,
                links: Vec::new(),
                inner: primary.height,
                start,
            },
        };
        self.chains.push(chain);
    }

    fn push_link(&mut self, optional: bool, step: Step, height: usize) {
        if let Some(chain) = self.chains.last_mut() {
            chain.links.push(Link { optional, step });
            chain.inner = chain.inner.max(height);
        }
    }

    fn finish_chain(&mut self) -> Parsed {
        let Some(chain) = self.chains.pop() else {
            return Ok(());
        };
        let ty = match chain.links.as_slice() {
            [.., Link {
                step: Step::Call { .. },
                ..
            }] => Ty::Bool,
            [Link {
                step: Step::Key(key),
                ..
            }] if key == "length" && matches!(chain.base_ty, Ty::String | Ty::Array) => Ty::Number,
            _ => Ty::Unknown,
        };
        self.push(Node {
            expr: Expr::Chain {
                base: Box::new(chain.base),
                links: chain.links,
            },
            height: chain.inner + 1,
            ty,
            start: chain.start,
            yields: yields_of(ty, chain.start),
        })
    }

    /// After `.` or `?.`: a property name, or a method name and its call.
    fn parse_named_step(&mut self, optional: bool) -> Parsed {
        let pos = self.pos();
        let Tok::Ident(name) = &self.peek().tok else {
            return Err(self.fail_unexpected("a property name"));
        };
        let name = name.clone();
        self.bump();
        if !self.is("(") {
            self.push_link(optional, Step::Key(name), 0);
            return Ok(());
        }
        let method = self.method_named(&name, pos)?;
        self.bump();
        if self.is(")") {
            return Err(self.fail_one_argument(method));
        }
        self.parse_expr()?;
        if self.is(",") {
            return Err(self.fail_one_argument(method));
        }
        self.expect(")")?;
        let argument = self.pop();
        let step = Step::Call {
            method,
            argument: Box::new(argument.expr),
        };
        self.push_link(optional, step, argument.height);
        Ok(())
    }

    fn method_named(&mut self, name: &str, pos: usize) -> Result<Method, Failed> {
        Method::from_name(name).ok_or_else(|| {
            self.fail_at(
                pos,
                &format!(
                    "unknown method `{name}`; conditions may call only `includes`, `startsWith` and `endsWith`"
                ),
            )
        })
    }

    fn fail_one_argument(&mut self, method: Method) -> Failed {
        let pos = self.pos();
        self.fail_at(
            pos,
            &format!("`{}` takes exactly one argument here", method.name()),
        )
    }

    /// `[expr]`; a literal string or number becomes a plain key.
    fn parse_index_step(&mut self, optional: bool) -> Parsed {
        self.expect("[")?;
        self.parse_expr()?;
        self.expect("]")?;
        let key = self.pop();
        let (step, height) = match key.expr {
            Expr::String(s) => (Step::Key(s), 0),
            Expr::Number(n) => (Step::Key(number_to_js_string(n)), 0),
            other => (Step::Index(Box::new(other)), key.height),
        };
        self.push_link(optional, step, height);
        Ok(())
    }

    fn parse_primary(&mut self) -> Parsed {
        if self.is("(") {
            self.bump();
            self.parse_expr()?;
            self.expect(")")
        } else if self.is("[") {
            self.parse_array()
        } else {
            self.parse_leaf()
        }
    }

    fn parse_array(&mut self) -> Parsed {
        let pos = self.bump();
        let first = self.nodes.len();
        while !self.is("]") {
            self.parse_expr()?;
            if self.is(",") {
                self.bump();
            } else if !self.is("]") {
                return Err(self.fail_unexpected("`,` or `]`"));
            }
        }
        self.bump();
        self.finish_array(first, pos)
    }

    fn finish_array(&mut self, first: usize, pos: usize) -> Parsed {
        let items: Vec<Node> = self.nodes.drain(first.min(self.nodes.len())..).collect();
        let height = 1 + items.iter().map(|item| item.height).max().unwrap_or(0);
        self.push(Node {
            expr: Expr::Array(items.into_iter().map(|item| item.expr).collect()),
            height,
            ty: Ty::Array,
            start: pos,
            yields: Err((pos, Ty::Array)),
        })
    }

    /// A literal or a root name.
    fn parse_leaf(&mut self) -> Parsed {
        let pos = self.pos();
        let (expr, ty) = match &self.peek().tok {
            Tok::Num(n) => (Expr::Number(*n), Ty::Number),
            Tok::Str(s) => (Expr::String(s.clone()), Ty::String),
            Tok::Ident(name) => match name.as_str() {
                "true" => (Expr::Bool(true), Ty::Bool),
                "false" => (Expr::Bool(false), Ty::Bool),
                "null" => (Expr::Null, Ty::Null),
                "undefined" => (Expr::Undefined, Ty::Undefined),
                "visitor" => (Expr::Root(Root::Visitor), Ty::Unknown),
                "space" => (Expr::Root(Root::Space), Ty::Unknown),
                "page" => (Expr::Root(Root::Page), Ty::Unknown),
                "in" => return Err(self.fail_unexpected("a value")),
                _ => {
                    let message = format!(
                        "unknown name `{name}`; conditions read `visitor`, `space` or `page`"
                    );
                    return Err(self.fail_at(pos, &message));
                }
            },
            _ => return Err(self.fail_unexpected("a value")),
        };
        self.bump();
        self.push(Node::leaf(expr, ty, pos))
    }
}

fn parse_node(src: &str) -> Result<Node, ConditionError> {
    let chars: Vec<char> = src.chars().collect();
    if chars.len() > MAX_CONDITION_LEN {
        return Err(error(
            MAX_CONDITION_LEN + 1,
            format!(
                "condition is too long: {} characters, at most {MAX_CONDITION_LEN}",
                chars.len()
            ),
        ));
    }
    let tokens = lex(&chars)?;
    if tokens.len() == 1 {
        return Err(error(1, "condition is empty"));
    }
    let mut parser = Parser::new(tokens);
    let failed = |parser: &mut Parser| {
        parser
            .error
            .take()
            .unwrap_or_else(|| error(1, "invalid condition"))
    };
    if parser.parse_expr().is_err() {
        return Err(failed(&mut parser));
    }
    let rest = parser.peek();
    if rest.tok != Tok::End {
        return Err(error(
            rest.pos,
            format!(
                "unexpected {}, expected an operator or the end of the condition",
                describe(&rest.tok)
            ),
        ));
    }
    Ok(parser.pop())
}

/// Parses a condition: syntax, names, methods, length and depth. See [`parse_condition`]
/// for the check the server applies.
pub fn parse(src: &str) -> Result<Expr, ConditionError> {
    parse_node(src).map(|node| node.expr)
}

/// Parses a condition and checks that it can yield a boolean: a condition that is known
/// to yield a string, number, array, `null` or `undefined` is refused.
pub fn parse_condition(src: &str) -> Result<Expr, ConditionError> {
    let node = parse_node(src)?;
    match node.yields {
        Ok(()) => Ok(node.expr),
        Err((position, ty)) => Err(error(
            position,
            format!(
                "condition must yield a boolean, but this yields {}",
                ty.describe()
            ),
        )),
    }
}

// ---------------------------------------------------------------------------------------
// Printing.

/// JavaScript's `Number.prototype.toString()` (radix 10).
fn number_to_js_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x < 0.0 {
        return format!("-{}", number_to_js_string(-x));
    }
    // Shortest round-trip digits and the exponent, from Rust's scientific formatting.
    let sci = format!("{x:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let k = digits.len() as i64;
    let n = exponent.parse::<i64>().unwrap_or(0) + 1;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (a, b) = digits.split_at(n as usize);
        format!("{a}.{b}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        if rest.is_empty() {
            format!("{first}e{sign}{}", e.abs())
        } else {
            format!("{first}.{rest}e{sign}{}", e.abs())
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether `key` can be written after a `.` (ASCII identifier names only).
fn is_plain_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// `key` as an array index (JavaScript's canonical numeric strings below 2³² − 1).
fn array_index(key: &str) -> Option<usize> {
    if key.is_empty()
        || !key.bytes().all(|b| b.is_ascii_digit())
        || (key.len() > 1 && key.starts_with('0'))
    {
        return None;
    }
    let n: u32 = key.parse().ok()?;
    (n < u32::MAX).then_some(n as usize)
}

/// Binding strength, for minimal parentheses.
fn precedence(expr: &Expr) -> u8 {
    match expr {
        Expr::Conditional { .. } => 1,
        Expr::Logical {
            op: LogicalOp::Or | LogicalOp::Coalesce,
            ..
        } => 2,
        Expr::Logical {
            op: LogicalOp::And, ..
        } => 3,
        Expr::Compare { op, .. } if op.is_equality() => 4,
        Expr::Compare { .. } => 5,
        Expr::Not(_) => 6,
        Expr::Number(n) if n.is_sign_negative() => 6,
        _ => 7,
    }
}

// The printer recurses once per level of the tree, which `parse` bounds by
// MAX_CONDITION_DEPTH; the recursive functions are small and write to a `String`.

fn write_operand(out: &mut String, expr: &Expr, min: u8) {
    if precedence(expr) < min {
        out.push('(');
        write_expr(out, expr);
        out.push(')');
    } else {
        write_expr(out, expr);
    }
}

fn write_expr(out: &mut String, expr: &Expr) {
    match expr {
        Expr::Array(items) => write_array(out, items),
        Expr::Chain { base, links } => write_chain(out, base, links),
        Expr::Not(operand) => {
            out.push('!');
            write_operand(out, operand, 6);
        }
        Expr::Compare { op, left, right } => write_compare(out, *op, left, right),
        Expr::Logical { op, operands } => write_logical(out, *op, operands),
        Expr::Conditional {
            test,
            then,
            otherwise,
        } => write_conditional(out, test, then, otherwise),
        leaf => write_leaf(out, leaf),
    }
}

fn write_leaf(out: &mut String, expr: &Expr) {
    match expr {
        Expr::Undefined => out.push_str("undefined"),
        Expr::Null => out.push_str("null"),
        Expr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Expr::Number(n) if *n == 0.0 && n.is_sign_negative() => out.push_str("-0"),
        Expr::Number(n) => out.push_str(&number_to_js_string(*n)),
        Expr::String(s) => write_string(out, s),
        Expr::Root(root) => out.push_str(root.name()),
        _ => {}
    }
}

fn write_array(out: &mut String, items: &[Expr]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_expr(out, item);
    }
    out.push(']');
}

fn write_chain(out: &mut String, base: &Expr, links: &[Link]) {
    let bare = matches!(
        base,
        Expr::Root(_)
            | Expr::String(_)
            | Expr::Array(_)
            | Expr::Bool(_)
            | Expr::Null
            | Expr::Undefined
    );
    if bare {
        write_expr(out, base);
    } else {
        out.push('(');
        write_expr(out, base);
        out.push(')');
    }
    for link in links {
        write_link(out, link);
    }
}

fn write_link(out: &mut String, link: &Link) {
    if link.optional {
        out.push_str("?.");
    }
    match &link.step {
        Step::Key(key) if is_plain_name(key) => {
            if !link.optional {
                out.push('.');
            }
            out.push_str(key);
        }
        Step::Key(key) => {
            out.push('[');
            if array_index(key).is_some() {
                out.push_str(key);
            } else {
                write_string(out, key);
            }
            out.push(']');
        }
        Step::Index(key) => {
            out.push('[');
            write_expr(out, key);
            out.push(']');
        }
        Step::Call { method, argument } => {
            if !link.optional {
                out.push('.');
            }
            out.push_str(method.name());
            out.push('(');
            write_expr(out, argument);
            out.push(')');
        }
    }
}

fn write_compare(out: &mut String, op: CompareOp, left: &Expr, right: &Expr) {
    let level = if op.is_equality() { 4 } else { 5 };
    write_operand(out, left, level);
    out.push(' ');
    out.push_str(op.symbol());
    out.push(' ');
    write_operand(out, right, level + 1);
}

fn write_logical(out: &mut String, op: LogicalOp, operands: &[Expr]) {
    let min = if op == LogicalOp::Or { 3 } else { 4 };
    for (i, operand) in operands.iter().enumerate() {
        if i > 0 {
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
        }
        write_operand(out, operand, min);
    }
}

fn write_conditional(out: &mut String, test: &Expr, then: &Expr, otherwise: &Expr) {
    write_operand(out, test, 2);
    out.push_str(" ? ");
    write_expr(out, then);
    out.push_str(" : ");
    write_expr(out, otherwise);
}

/// Canonical printing: minimal parentheses, double-quoted strings with JSON-style escapes,
/// numbers as JavaScript prints them. Printing recurses once per level of the tree, which
/// [`parse`] bounds by [`MAX_CONDITION_DEPTH`].
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write_expr(&mut out, self);
        f.write_str(&out)
    }
}

// ---------------------------------------------------------------------------------------
// Evaluation.

/// A JavaScript value during evaluation. Arrays and objects from the context are borrowed,
/// so that `===` can compare them by identity as JavaScript does.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// `undefined` (also: a missing property).
    Undefined,
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number.
    Number(f64),
    /// A string.
    String(Cow<'a, str>),
    /// An array of the context.
    Array(&'a Vec<Json>),
    /// An array made by an array literal (a new array: equal to nothing by `===`).
    NewArray(Vec<Value<'a>>),
    /// An object of the context.
    Object(&'a Map<String, Json>),
}

impl<'a> Value<'a> {
    /// The value of a JSON value of the context.
    pub fn from_json(json: &'a Json) -> Value<'a> {
        match json {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.as_f64().unwrap_or(f64::NAN)),
            Json::String(s) => Value::String(Cow::Borrowed(s)),
            Json::Array(items) => Value::Array(items),
            Json::Object(map) => Value::Object(map),
        }
    }

    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Undefined | Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => *n != 0.0 && !n.is_nan(),
            Value::String(s) => !s.is_empty(),
            Value::Array(_) | Value::NewArray(_) | Value::Object(_) => true,
        }
    }

    /// Whether the value is `null` or `undefined`.
    pub fn is_nullish(&self) -> bool {
        matches!(self, Value::Undefined | Value::Null)
    }

    fn is_object(&self) -> bool {
        matches!(
            self,
            Value::Array(_) | Value::NewArray(_) | Value::Object(_)
        )
    }

    fn type_name(&self) -> &'static str {
        match self {
            Value::Undefined => "undefined",
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) | Value::NewArray(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// What JavaScript would throw (a `TypeError`); the condition is then false.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("TypeError: {message}")]
pub struct Thrown {
    /// What went wrong.
    pub message: String,
}

fn thrown(message: impl Into<String>) -> Thrown {
    Thrown {
        message: message.into(),
    }
}

/// Evaluates a condition against a context (an object whose keys are the root names):
/// the JavaScript truthiness of its value, and `false` when JavaScript would throw.
pub fn evaluate(expr: &Expr, context: &Json) -> bool {
    evaluate_value(expr, context).is_ok_and(|v| v.truthy())
}

/// Evaluates an expression to its JavaScript value, or what JavaScript would throw. Never
/// panics; a tree deeper than [`MAX_CONDITION_DEPTH`] (which [`parse`] never yields)
/// throws instead of recursing further.
pub fn evaluate_value<'a>(expr: &'a Expr, context: &'a Json) -> Result<Value<'a>, Thrown> {
    let mut evaluator = Evaluator {
        context,
        thrown: None,
    };
    match evaluator.eval(expr, 1) {
        Some(value) => Ok(value),
        None => Err(evaluator
            .thrown
            .unwrap_or_else(|| thrown("evaluation failed"))),
    }
}

/// The evaluator recurses once per level of the tree (bounded, see [`evaluate_value`]);
/// its recursive functions are small and return `None` when JavaScript would throw, with
/// what was thrown in `thrown`.
struct Evaluator<'a> {
    context: &'a Json,
    thrown: Option<Thrown>,
}

impl<'a> Evaluator<'a> {
    fn lift(&mut self, result: Result<Value<'a>, Thrown>) -> Option<Value<'a>> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.thrown = Some(error);
                None
            }
        }
    }

    fn eval(&mut self, expr: &'a Expr, depth: usize) -> Option<Value<'a>> {
        if depth > MAX_CONDITION_DEPTH {
            return self.too_deep();
        }
        match expr {
            Expr::Array(items) => self.eval_array(items, depth + 1),
            Expr::Chain { base, links } => self.eval_chain(base, links, depth + 1),
            Expr::Not(operand) => self.eval_not(operand, depth + 1),
            Expr::Compare { op, left, right } => self.eval_compare(*op, left, right, depth + 1),
            Expr::Logical { op, operands } => self.eval_logical(*op, operands, depth + 1),
            Expr::Conditional {
                test,
                then,
                otherwise,
            } => self.eval_conditional(test, then, otherwise, depth + 1),
            leaf => Some(self.eval_leaf(leaf)),
        }
    }

    fn too_deep(&mut self) -> Option<Value<'a>> {
        self.lift(Err(thrown("condition is nested too deeply")))
    }

    fn eval_leaf(&self, expr: &'a Expr) -> Value<'a> {
        match expr {
            Expr::Null => Value::Null,
            Expr::Bool(b) => Value::Bool(*b),
            Expr::Number(n) => Value::Number(*n),
            Expr::String(s) => Value::String(Cow::Borrowed(s)),
            Expr::Root(root) => self
                .context
                .get(root.name())
                .map_or(Value::Undefined, Value::from_json),
            _ => Value::Undefined,
        }
    }

    fn eval_array(&mut self, items: &'a [Expr], depth: usize) -> Option<Value<'a>> {
        let mut values = Vec::with_capacity(items.len());
        for item in items {
            values.push(self.eval(item, depth)?);
        }
        Some(Value::NewArray(values))
    }

    fn eval_chain(&mut self, base: &'a Expr, links: &'a [Link], depth: usize) -> Option<Value<'a>> {
        let mut current = self.eval(base, depth)?;
        for link in links {
            if link.optional && current.is_nullish() {
                // `?.` ends the whole chain.
                return Some(Value::Undefined);
            }
            let operand = match &link.step {
                Step::Key(_) => Value::Undefined,
                Step::Index(operand)
                | Step::Call {
                    argument: operand, ..
                } => self.eval(operand, depth)?,
            };
            current = self.lift(apply_step(current, &link.step, &operand))?;
        }
        Some(current)
    }

    fn eval_not(&mut self, operand: &'a Expr, depth: usize) -> Option<Value<'a>> {
        let value = self.eval(operand, depth)?;
        Some(Value::Bool(!value.truthy()))
    }

    fn eval_compare(
        &mut self,
        op: CompareOp,
        left: &'a Expr,
        right: &'a Expr,
        depth: usize,
    ) -> Option<Value<'a>> {
        let left = self.eval(left, depth)?;
        let right = self.eval(right, depth)?;
        self.lift(compare(op, &left, &right).map(Value::Bool))
    }

    fn eval_logical(
        &mut self,
        op: LogicalOp,
        operands: &'a [Expr],
        depth: usize,
    ) -> Option<Value<'a>> {
        let (last, init) = operands.split_last()?;
        for operand in init {
            let value = self.eval(operand, depth)?;
            let done = match op {
                LogicalOp::And => !value.truthy(),
                LogicalOp::Or => value.truthy(),
                LogicalOp::Coalesce => !value.is_nullish(),
            };
            if done {
                return Some(value);
            }
        }
        self.eval(last, depth)
    }

    fn eval_conditional(
        &mut self,
        test: &'a Expr,
        then: &'a Expr,
        otherwise: &'a Expr,
        depth: usize,
    ) -> Option<Value<'a>> {
        if self.eval(test, depth)?.truthy() {
            self.eval(then, depth)
        } else {
            self.eval(otherwise, depth)
        }
    }
}

/// Applies one step of a chain to `target`; `operand` is the value of the computed key or
/// of the argument.
fn apply_step<'a>(
    target: Value<'a>,
    step: &'a Step,
    operand: &Value<'a>,
) -> Result<Value<'a>, Thrown> {
    match step {
        Step::Key(key) => get(target, key),
        Step::Index(_) => get(target, &to_js_string(operand, 0)?),
        Step::Call { method, .. } => call(target, *method, operand),
    }
}

/// `value[key]`, own properties only (plus `length` of strings and arrays).
fn get<'a>(value: Value<'a>, key: &str) -> Result<Value<'a>, Thrown> {
    Ok(match value {
        Value::Undefined | Value::Null => {
            return Err(thrown(format!(
                "cannot read properties of {} (reading '{key}')",
                value.type_name()
            )))
        }
        Value::Bool(_) | Value::Number(_) => Value::Undefined,
        Value::String(s) => {
            if key == "length" {
                Value::Number(s.encode_utf16().count() as f64)
            } else if let Some(index) = array_index(key) {
                code_unit_at(&s, index).map_or(Value::Undefined, |c| Value::String(Cow::Owned(c)))
            } else {
                Value::Undefined
            }
        }
        Value::Array(items) => {
            if key == "length" {
                Value::Number(items.len() as f64)
            } else {
                array_index(key)
                    .and_then(|i| items.get(i))
                    .map_or(Value::Undefined, Value::from_json)
            }
        }
        Value::NewArray(items) => {
            if key == "length" {
                Value::Number(items.len() as f64)
            } else {
                array_index(key)
                    .and_then(|i| items.into_iter().nth(i))
                    .unwrap_or(Value::Undefined)
            }
        }
        Value::Object(map) => map.get(key).map_or(Value::Undefined, Value::from_json),
    })
}

/// The UTF-16 code unit at `index` as a string; half of a surrogate pair (which Rust
/// strings cannot hold alone) reads as U+FFFD.
fn code_unit_at(s: &str, index: usize) -> Option<String> {
    let mut unit = 0;
    for c in s.chars() {
        let len = c.len_utf16();
        if index < unit + len {
            return Some(if len == 1 {
                c.to_string()
            } else {
                "\u{fffd}".into()
            });
        }
        unit += len;
    }
    None
}

fn call<'a>(target: Value<'a>, method: Method, argument: &Value<'a>) -> Result<Value<'a>, Thrown> {
    let found = match (&target, method) {
        (Value::Undefined | Value::Null, _) => {
            return Err(thrown(format!(
                "cannot read properties of {} (reading '{}')",
                target.type_name(),
                method.name()
            )))
        }
        (Value::Array(items), Method::Includes) => items
            .iter()
            .any(|item| same_value_zero(&Value::from_json(item), argument)),
        (Value::NewArray(items), Method::Includes) => {
            items.iter().any(|item| same_value_zero(item, argument))
        }
        (Value::String(s), _) => {
            let needle = to_js_string(argument, 0)?;
            match method {
                Method::Includes => s.contains(&*needle),
                Method::StartsWith => s.starts_with(&*needle),
                Method::EndsWith => s.ends_with(&*needle),
            }
        }
        (other, _) => {
            return Err(thrown(format!(
                "{} is not a function on {}",
                method.name(),
                other.type_name()
            )))
        }
    };
    Ok(Value::Bool(found))
}

/// JavaScript's `ToString` (`ToPrimitive` first for arrays and objects). Nested arrays are
/// joined recursively, at most [`MAX_CONDITION_DEPTH`] levels deep (deeper throws).
fn to_js_string<'a>(value: &Value<'a>, depth: usize) -> Result<Cow<'a, str>, Thrown> {
    if depth > MAX_CONDITION_DEPTH {
        return Err(thrown("array nested too deeply to convert to a string"));
    }
    let join = |items: &mut dyn Iterator<Item = Value<'a>>| -> Result<Cow<'a, str>, Thrown> {
        let mut out = String::new();
        for (i, item) in items.enumerate() {
            if i > 0 {
                out.push(',');
            }
            if !item.is_nullish() {
                out.push_str(&to_js_string(&item, depth + 1)?);
            }
        }
        Ok(Cow::Owned(out))
    };
    Ok(match value {
        Value::Undefined => Cow::Borrowed("undefined"),
        Value::Null => Cow::Borrowed("null"),
        Value::Bool(true) => Cow::Borrowed("true"),
        Value::Bool(false) => Cow::Borrowed("false"),
        Value::Number(n) => Cow::Owned(number_to_js_string(*n)),
        Value::String(s) => s.clone(),
        Value::Array(items) => join(&mut items.iter().map(Value::from_json))?,
        Value::NewArray(items) => join(&mut items.iter().cloned())?,
        Value::Object(_) => Cow::Borrowed("[object Object]"),
    })
}

/// JavaScript's `StringToNumber`.
fn string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(is_space);
    if t.is_empty() {
        return 0.0;
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let radix = match t.get(..2) {
        Some("0x" | "0X") => 16,
        Some("0o" | "0O") => 8,
        Some("0b" | "0B") => 2,
        _ => 10,
    };
    if radix != 10 {
        let digits = &t[2..];
        if digits.is_empty() {
            return f64::NAN;
        }
        let mut value = 0.0;
        for c in digits.chars() {
            match c.to_digit(radix) {
                Some(d) => value = value * radix as f64 + d as f64,
                None => return f64::NAN,
            }
        }
        return value;
    }
    let bytes = t.as_bytes();
    let mut i = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = |i: &mut usize| {
        let from = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        &t[from..*i]
    };
    let int = digits(&mut i);
    let mut frac = "";
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        frac = digits(&mut i);
    }
    if int.is_empty() && frac.is_empty() {
        return f64::NAN;
    }
    let mut exp = String::new();
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if let Some(&sign @ (b'+' | b'-')) = bytes.get(i) {
            exp.push(sign as char);
            i += 1;
        }
        let e = digits(&mut i);
        if e.is_empty() {
            return f64::NAN;
        }
        exp.push_str(e);
    }
    if i != bytes.len() {
        return f64::NAN;
    }
    let value = decimal_value(int, frac, &exp);
    if negative {
        -value
    } else {
        value
    }
}

/// JavaScript's `ToNumber`.
fn to_number(value: &Value<'_>) -> Result<f64, Thrown> {
    Ok(match value {
        Value::Undefined => f64::NAN,
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => *n,
        Value::String(s) => string_to_number(s),
        other => string_to_number(&to_js_string(other, 0)?),
    })
}

/// JavaScript's `ToPrimitive`: arrays and objects become their strings.
fn to_primitive<'a>(value: &Value<'a>) -> Result<Value<'a>, Thrown> {
    if value.is_object() {
        Ok(Value::String(to_js_string(value, 0)?))
    } else {
        Ok(value.clone())
    }
}

/// `===`: numbers by value, strings by content, arrays and objects by identity.
fn strict_equals(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Undefined, Value::Undefined) | (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => std::ptr::eq(*x, *y),
        (Value::Object(x), Value::Object(y)) => std::ptr::eq(*x, *y),
        _ => false,
    }
}

/// SameValueZero (used by `Array.prototype.includes`): `===`, except that NaN equals NaN.
fn same_value_zero(a: &Value<'_>, b: &Value<'_>) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => strict_equals(a, b),
    }
}

/// `==`: JavaScript's IsLooselyEqual.
fn loose_equals(a: &Value<'_>, b: &Value<'_>) -> Result<bool, Thrown> {
    let mut a = a.clone();
    let mut b = b.clone();
    // Each round converts one side closer to a number or string; three rounds suffice.
    for _ in 0..8 {
        let same_type = std::mem::discriminant(&a) == std::mem::discriminant(&b)
            || (a.is_object() && b.is_object());
        if same_type {
            return Ok(strict_equals(&a, &b));
        }
        match (&a, &b) {
            (x, y) if x.is_nullish() && y.is_nullish() => return Ok(true),
            (x, y) if x.is_nullish() || y.is_nullish() => return Ok(false),
            (Value::Number(x), Value::String(s)) | (Value::String(s), Value::Number(x)) => {
                return Ok(*x == string_to_number(s))
            }
            (Value::Bool(x), _) => a = Value::Number(f64::from(u8::from(*x))),
            (_, Value::Bool(y)) => b = Value::Number(f64::from(u8::from(*y))),
            (x, Value::Number(_) | Value::String(_)) if x.is_object() => a = to_primitive(x)?,
            (Value::Number(_) | Value::String(_), y) if y.is_object() => b = to_primitive(y)?,
            _ => return Ok(false),
        }
    }
    Ok(false)
}

/// The order of `a` and `b` for `<` and friends: `None` when a NaN is involved.
fn relational_order(a: &Value<'_>, b: &Value<'_>) -> Result<Option<Ordering>, Thrown> {
    let a = to_primitive(a)?;
    let b = to_primitive(b)?;
    if let (Value::String(x), Value::String(y)) = (&a, &b) {
        return Ok(Some(x.encode_utf16().cmp(y.encode_utf16())));
    }
    Ok(to_number(&a)?.partial_cmp(&to_number(&b)?))
}

fn has_property(target: &Value<'_>, key: &Value<'_>) -> Result<bool, Thrown> {
    let has_index =
        |len: usize, key: &str| key == "length" || array_index(key).is_some_and(|i| i < len);
    match target {
        Value::Object(map) => Ok(map.contains_key(&*to_js_string(key, 0)?)),
        Value::Array(items) => Ok(has_index(items.len(), &to_js_string(key, 0)?)),
        Value::NewArray(items) => Ok(has_index(items.len(), &to_js_string(key, 0)?)),
        other => Err(thrown(format!(
            "cannot use 'in' operator to search in {}",
            other.type_name()
        ))),
    }
}

fn compare(op: CompareOp, left: &Value<'_>, right: &Value<'_>) -> Result<bool, Thrown> {
    Ok(match op {
        CompareOp::StrictEq => strict_equals(left, right),
        CompareOp::StrictNe => !strict_equals(left, right),
        CompareOp::LooseEq => loose_equals(left, right)?,
        CompareOp::LooseNe => !loose_equals(left, right)?,
        CompareOp::Lt => relational_order(left, right)? == Some(Ordering::Less),
        CompareOp::Gt => relational_order(left, right)? == Some(Ordering::Greater),
        CompareOp::Le => matches!(
            relational_order(left, right)?,
            Some(Ordering::Less | Ordering::Equal)
        ),
        CompareOp::Ge => matches!(
            relational_order(left, right)?,
            Some(Ordering::Greater | Ordering::Equal)
        ),
        CompareOp::In => has_property(right, left)?,
    })
}

// ---------------------------------------------------------------------------------------
// What a condition reads of its context.

/// A path into a condition's context, from its root: `["visitor", "claims", "pro"]`. The
/// empty path stands for the whole context.
pub type ContextPath = Vec<String>;

/// Adds to `out` the paths of the context that `expr` reads: each member chain from a root,
/// up to its first computed key or method call (what follows depends on the value read
/// there as a whole). Two contexts that agree on every such path (see [`project`]) give
/// `expr` the same value.
pub fn reads(expr: &Expr, out: &mut BTreeSet<ContextPath>) {
    reads_at(expr, out, 1);
}

fn reads_at(expr: &Expr, out: &mut BTreeSet<ContextPath>, depth: usize) {
    if depth > MAX_CONDITION_DEPTH {
        // Deeper than `parse` ever yields: it reads everything, rather than recurse on.
        out.insert(Vec::new());
        return;
    }
    match expr {
        Expr::Undefined | Expr::Null | Expr::Bool(_) | Expr::Number(_) | Expr::String(_) => {}
        Expr::Array(items) => items.iter().for_each(|e| reads_at(e, out, depth + 1)),
        Expr::Root(root) => {
            out.insert(vec![root.name().to_string()]);
        }
        Expr::Chain { base, links } => {
            let mut path = match &**base {
                Expr::Root(root) => Some(vec![root.name().to_string()]),
                other => {
                    reads_at(other, out, depth + 1);
                    None
                }
            };
            for link in links {
                match &link.step {
                    Step::Key(key) => {
                        if let Some(p) = path.as_mut() {
                            p.push(key.clone());
                        }
                    }
                    Step::Index(index) => {
                        reads_at(index, out, depth + 1);
                        out.extend(path.take());
                    }
                    Step::Call { argument, .. } => {
                        reads_at(argument, out, depth + 1);
                        out.extend(path.take());
                    }
                }
            }
            out.extend(path);
        }
        Expr::Not(operand) => reads_at(operand, out, depth + 1),
        Expr::Compare { left, right, .. } => {
            reads_at(left, out, depth + 1);
            reads_at(right, out, depth + 1);
        }
        Expr::Logical { operands, .. } => {
            operands.iter().for_each(|e| reads_at(e, out, depth + 1));
        }
        Expr::Conditional {
            test,
            then,
            otherwise,
        } => {
            reads_at(test, out, depth + 1);
            reads_at(then, out, depth + 1);
            reads_at(otherwise, out, depth + 1);
        }
    }
}

/// The part of `context` that conditions reading only `paths` see: for each path, the
/// objects on its way (with only the keys some path names), and the value at its end, or
/// the first value on the way that is not an object (a string, an array…), kept whole. A
/// condition whose [`reads`] are among `paths` evaluates alike on `context` and on its
/// projection, so the projection names what such conditions can tell apart: claims that
/// nothing reads are dropped.
pub fn project(context: &Json, paths: &BTreeSet<ContextPath>) -> Json {
    let mut out = Json::Object(Map::new());
    for path in paths {
        let mut at = context;
        let mut depth = 0;
        while let (Json::Object(map), Some(key)) = (at, path.get(depth)) {
            match map.get(key) {
                Some(next) => {
                    at = next;
                    depth += 1;
                }
                None => break,
            }
        }
        // The objects on the way stay objects: a missing key of one reads as `undefined`,
        // where a missing object would make the read throw.
        let whole = depth == path.len() || !at.is_object();
        place(&mut out, &path[..depth], whole.then_some(at));
    }
    out
}

/// Makes the objects of `path` in `out` (a value kept whole on the way holds the rest
/// already), and puts `value` at its end when given.
fn place(out: &mut Json, path: &[String], value: Option<&Json>) {
    let mut at = out;
    for key in path {
        let Json::Object(map) = at else {
            return;
        };
        at = map
            .entry(key.clone())
            .or_insert_with(|| Json::Object(Map::new()));
    }
    if let Some(value) = value {
        *at = value.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> Json {
        json!({
            "visitor": {"claims": {
                "unsigned": {"beta": true, "region": "eu"},
                "isInternal": false,
                "plan": "enterprise",
                "seats": 12,
                "roles": ["admin", "editor"],
                "email": "ada@example.com",
                "name": "Zoë 😀",
                "score": 0,
                "nothing": null,
                "tags": [],
                "nested": {"a": {"b": [1, 2, {"c": "deep"}]}},
                "flags": {"new-ui": true, "0": "zero"},
                "version": "10",
                "list": [[1, 2], [3]],
                "ratio": 0.5
            }},
            "space": {"id": "space-1", "title": "Docs"},
            "page": {"path": "guides/intro"}
        })
    }

    /// Accepted conditions: source, canonical print, value against [`context`].
    const ACCEPTED: &[(&str, &str, bool)] = &[
        (
            "visitor.claims.unsigned.beta === true && !visitor.claims.isInternal",
            "visitor.claims.unsigned.beta === true && !visitor.claims.isInternal",
            true,
        ),
        (
            "visitor.claims.plan === \"enterprise\" || visitor.claims.seats >= 10",
            "visitor.claims.plan === \"enterprise\" || visitor.claims.seats >= 10",
            true,
        ),
        ("\"beta\" in visitor.claims.unsigned", "\"beta\" in visitor.claims.unsigned", true),
        (
            "visitor.claims?.roles?.includes('admin')",
            "visitor.claims?.roles?.includes(\"admin\")",
            true,
        ),
        ("(visitor.claims.a ?? false)", "visitor.claims.a ?? false", false),
        ("visitor.claims.beta", "visitor.claims.beta", false),
        // `?.` ends the whole chain, but not through parentheses.
        (
            "visitor.claims.missing?.deep.deeper === undefined",
            "visitor.claims.missing?.deep.deeper === undefined",
            true,
        ),
        (
            "(visitor.claims.missing?.deep).deeper === undefined",
            "(visitor.claims.missing?.deep).deeper === undefined",
            false,
        ),
        ("!(visitor.claims.missing.deep)", "!visitor.claims.missing.deep", false),
        (
            "visitor.claims['unsigned'][\"region\"] == 'eu'",
            "visitor.claims.unsigned.region == \"eu\"",
            true,
        ),
        ("(visitor.claims).roles[0] === \"admin\"", "visitor.claims.roles[0] === \"admin\"", true),
        ("visitor.claims.roles.length === 2", "visitor.claims.roles.length === 2", true),
        ("visitor.claims.name.length == 6", "visitor.claims.name.length == 6", true),
        (
            "visitor.claims.version == 10 && visitor.claims.version !== 10",
            "visitor.claims.version == 10 && visitor.claims.version !== 10",
            true,
        ),
        ("visitor.claims.version < \"9\"", "visitor.claims.version < \"9\"", true),
        ("visitor.claims.version < 9", "visitor.claims.version < 9", false),
        (
            "visitor.claims.nothing == undefined && visitor.claims.nothing !== undefined",
            "visitor.claims.nothing == undefined && visitor.claims.nothing !== undefined",
            true,
        ),
        ("!visitor.claims.tags", "!visitor.claims.tags", false),
        ("!visitor.claims.score", "!visitor.claims.score", true),
        (
            "visitor.claims.email.endsWith(\"@example.com\")&&visitor.claims.email.startsWith('ada')",
            "visitor.claims.email.endsWith(\"@example.com\") && visitor.claims.email.startsWith(\"ada\")",
            true,
        ),
        (
            "visitor.claims.plan === 'pro' ? false : visitor.claims.seats > 10",
            "visitor.claims.plan === \"pro\" ? false : visitor.claims.seats > 10",
            true,
        ),
        ("[1, 2, 3,].includes(visitor.claims.seats)", "[1, 2, 3].includes(visitor.claims.seats)", false),
        (
            "visitor.claims.nested.a.b[2].c === \"deep\"",
            "visitor.claims.nested.a.b[2].c === \"deep\"",
            true,
        ),
        (
            "visitor.claims.flags['new-ui'] && visitor.claims.flags[0] === 'zero'",
            "visitor.claims.flags[\"new-ui\"] && visitor.claims.flags[0] === \"zero\"",
            true,
        ),
        (
            "'0' in visitor.claims.roles && !('2' in visitor.claims.roles) && 'length' in visitor.claims.roles",
            "\"0\" in visitor.claims.roles && !(\"2\" in visitor.claims.roles) && \"length\" in visitor.claims.roles",
            true,
        ),
        (
            "space.id === 'space-1' && page.path.startsWith(\"guides/\")",
            "space.id === \"space-1\" && page.path.startsWith(\"guides/\")",
            true,
        ),
        (
            "(visitor.claims.a || visitor.claims.b) ?? true",
            "(visitor.claims.a || visitor.claims.b) ?? true",
            true,
        ),
        (
            "visitor.claims.a || (visitor.claims.b || (visitor.claims.c || true))",
            "visitor.claims.a || visitor.claims.b || visitor.claims.c || true",
            true,
        ),
        (
            "visitor.claims.a && (visitor.claims.b || visitor.claims.c)",
            "visitor.claims.a && (visitor.claims.b || visitor.claims.c)",
            false,
        ),
        ("((visitor.claims.seats > 10))", "visitor.claims.seats > 10", true),
        ("visitor.claims.seats > - 1.5e1", "visitor.claims.seats > -15", true),
        ("visitor.claims.ratio === .5e0", "visitor.claims.ratio === 0.5", true),
        ("!!visitor.claims.unsigned.beta", "!!visitor.claims.unsigned.beta", true),
        (
            "visitor.claims.list[0].includes(2) && !visitor.claims.roles.includes(undefined)",
            "visitor.claims.list[0].includes(2) && !visitor.claims.roles.includes(undefined)",
            true,
        ),
        ("visitor.claims.seats == '12' && true == 1", "visitor.claims.seats == \"12\" && true == 1", true),
        ("'it\\'s' === \"it's\"", "\"it's\" === \"it's\"", true),
        ("\"\\u00e9\\t\\u{1F600}\" === 'é\\t😀'", "\"é\\t😀\" === \"é\\t😀\"", true),
        ("visitor.claims.a ? true : false", "visitor.claims.a ? true : false", false),
        (
            "visitor.claims.seats >= 12 && visitor.claims.seats <= 12.0",
            "visitor.claims.seats >= 12 && visitor.claims.seats <= 12",
            true,
        ),
        ("visitor.claims.unsigned?.[\"beta\"]", "visitor.claims.unsigned?.beta", true),
        (
            "visitor.claims.a ?? visitor.claims.b ?? visitor.claims.plan === \"enterprise\"",
            "visitor.claims.a ?? visitor.claims.b ?? visitor.claims.plan === \"enterprise\"",
            true,
        ),
        (
            "visitor.claims.a ? false : visitor.claims.b ? false : true",
            "visitor.claims.a ? false : visitor.claims.b ? false : true",
            true,
        ),
        (
            "(visitor.claims.a ? true : false) ? false : true",
            "(visitor.claims.a ? true : false) ? false : true",
            true,
        ),
        (
            "visitor.claims.roles[visitor.claims.score] === 'admin'",
            "visitor.claims.roles[visitor.claims.score] === \"admin\"",
            true,
        ),
        ("visitor.claims.list == '1,2,3'", "visitor.claims.list == \"1,2,3\"", true),
        (
            "visitor.claims.roles === visitor.claims.roles && [1] !== [1]",
            "visitor.claims.roles === visitor.claims.roles && [1] !== [1]",
            true,
        ),
        ("(1 < 2) < 3 === (true < 3)", "1 < 2 < 3 === true < 3", true),
        ("1 === (2 === 2)", "1 === (2 === 2)", false),
        ("visitor.claims.name[4] === '\\uFFFD'", "visitor.claims.name[4] === \"\u{fffd}\"", true),
        ("\"a\\\"b\\\\c\\n\\u0001\".length === 7", "\"a\\\"b\\\\c\\n\\u0001\".length === 7", true),
        ("visitor.claims.tags.in === undefined", "visitor.claims.tags.in === undefined", true),
        ("visitor.claims[\"é\"] === undefined", "visitor.claims[\"é\"] === undefined", true),
        ("visitor.claims.a?.includes(1) === undefined", "visitor.claims.a?.includes(1) === undefined", true),
        ("1e21 === 1000000000000000000000", "1e+21 === 1e+21", true),
        ("'12' <= visitor.claims.seats", "\"12\" <= visitor.claims.seats", true),
        (
            "visitor.claims.flags[1e21] === visitor.claims.flags['1e+21'] && visitor.claims.flags[1.50] === undefined",
            "visitor.claims.flags[\"1e+21\"] === visitor.claims.flags[\"1e+21\"] && visitor.claims.flags[\"1.5\"] === undefined",
            true,
        ),
        ("visitor.claims.roles[-0] === 'admin'", "visitor.claims.roles[0] === \"admin\"", true),
        ("visitor.claims.nested.a.b[-1] === undefined", "visitor.claims.nested.a.b[\"-1\"] === undefined", true),
    ];

    #[test]
    fn accepted_examples_print_canonically_and_evaluate() {
        let context = context();
        assert!(ACCEPTED.len() >= 25);
        for &(src, canonical, expected) in ACCEPTED {
            let expr = parse_condition(src).unwrap_or_else(|e| panic!("{src}: {e}"));
            assert_eq!(expr.to_string(), canonical, "canonical print of {src}");
            assert_eq!(parse(canonical), Ok(expr.clone()), "reparse of {canonical}");
            assert_eq!(evaluate(&expr, &context), expected, "value of {src}");
        }
    }

    /// Refused conditions: source, error position, fragment of the message.
    fn rejected() -> Vec<(String, usize, &'static str)> {
        let s = |x: &str| x.to_string();
        vec![
            (s(""), 1, "condition is empty"),
            (s("  \t "), 1, "condition is empty"),
            (
                s("foo === 1"),
                1,
                "unknown name `foo`; conditions read `visitor`, `space` or `page`",
            ),
            (s("typeof visitor"), 1, "unknown name `typeof`"),
            (
                s("visitor.claims.x.toUpperCase()"),
                18,
                "unknown method `toUpperCase`",
            ),
            (
                s("visitor.claims.x.length()"),
                18,
                "unknown method `length`",
            ),
            (
                s("\"abc\""),
                1,
                "condition must yield a boolean, but this yields a string",
            ),
            (s("42"), 1, "this yields a number"),
            (s("null"), 1, "this yields null"),
            (s("undefined"), 1, "this yields undefined"),
            (s("[visitor.claims.a]"), 1, "this yields an array"),
            (s("\"abc\".length"), 1, "this yields a number"),
            (s("\"x\" && 1"), 1, "this yields a string"),
            (
                s("visitor.claims.a ? \"x\" : true"),
                20,
                "this yields a string",
            ),
            (
                s("visitor.claims.a ?? visitor.claims.b || true"),
                38,
                "`??` cannot be mixed",
            ),
            (
                s("visitor.claims.a || visitor.claims.b ?? true"),
                38,
                "`??` cannot be mixed",
            ),
            (
                s("visitor.claims.a && visitor.claims.b ?? true"),
                38,
                "`??` cannot be mixed",
            ),
            (
                s("(visitor.claims.a"),
                18,
                "unexpected end of condition, expected `)`",
            ),
            (
                s("(visitor.claims.a visitor"),
                19,
                "expected `)`, found `visitor`",
            ),
            (s("visitor.claims.a)"), 17, "unexpected `)`"),
            (s("visitor.claims.a visitor.b"), 18, "unexpected `visitor`"),
            (s("visitor.claims.a === 'abc"), 22, "unterminated string"),
            (s("'ab\ncd' === visitor.a"), 1, "unterminated string"),
            (s("visitor.claims.a = 1"), 18, "unexpected `=`"),
            (s("visitor.claims.a & true"), 18, "did you mean `&&`"),
            (s("visitor.claims.a | true"), 18, "did you mean `||`"),
            (s("visitor.claims.a ==="), 21, "unexpected end of condition"),
            (
                s("visitor.claims.a."),
                18,
                "unexpected end of condition, expected a property name",
            ),
            (
                s("visitor.claims.roles.includes()"),
                31,
                "takes exactly one argument",
            ),
            (
                s("visitor.claims.roles.includes(1, 2)"),
                32,
                "takes exactly one argument",
            ),
            (s("visitor.claims[\"a\"](1)"), 20, "can be called"),
            (
                s("visitor.claims.a?.(1)"),
                19,
                "expected a property name after `?.`",
            ),
            (s("visitor.claims.a === 01"), 22, "leading zero"),
            (s("visitor.claims.a === 1e"), 24, "exponent"),
            (s("visitor.claims.a === 1e999"), 22, "too large"),
            (
                s("visitor.claims.a === 1.toString()"),
                24,
                "right after a number",
            ),
            (s("'\\x41' === visitor.a"), 2, "unknown escape `\\x`"),
            (s("'\\uD800' === visitor.a"), 2, "lone surrogate"),
            (s("'\\u12' === visitor.a"), 2, "invalid `\\u` escape"),
            (s("visitor.claims.a # 1"), 18, "unexpected character `#`"),
            (s("-visitor.claims.a"), 2, "expected a number after `-`"),
            (s("visitor.claims.a ? true"), 24, "expected `:`"),
            (
                s("[1, 2"),
                6,
                "unexpected end of condition, expected `,` or `]`",
            ),
            (s("[1 2]"), 4, "expected `,` or `]`, found a number"),
            (s("[,]"), 2, "expected a value, found `,`"),
            (s(" === visitor"), 2, "expected a value, found `===`"),
            (s("in visitor"), 1, "expected a value, found `in`"),
            (
                "visitor.claims.a === 1 && ".repeat(40) + "true",
                MAX_CONDITION_LEN + 1,
                "too long",
            ),
            (
                "(".repeat(40) + "true" + &")".repeat(40),
                33,
                "nested too deeply",
            ),
            ("!".repeat(40) + "true", 32, "nested too deeply"),
            ("[".repeat(40) + &"]".repeat(40), 33, "nested too deeply"),
            ("1 === ".repeat(40) + "1", 6 * 31 + 3, "nested too deeply"),
        ]
    }

    #[test]
    fn rejected_examples_name_the_position_and_problem() {
        let rejected = rejected();
        assert!(rejected.len() >= 20);
        for (src, position, fragment) in rejected {
            let err = parse_condition(&src).expect_err(&src);
            assert!(
                err.message.contains(fragment),
                "{src:?}: `{}` does not contain `{fragment}`",
                err.message
            );
            assert_eq!(err.position, position, "{src:?}: {err}");
            assert!(err
                .to_string()
                .ends_with(&format!(" at position {position}")));
        }
    }

    #[test]
    fn parse_accepts_what_only_the_boolean_check_refuses() {
        for src in [
            "\"abc\"",
            "42",
            "null",
            "[1]",
            "visitor.claims.a ? 'x' : true",
        ] {
            assert!(parse(src).is_ok(), "{src}");
            assert!(parse_condition(src).is_err(), "{src}");
        }
    }

    #[test]
    fn limits_are_exact() {
        let at_limit =
            "(".repeat(MAX_CONDITION_DEPTH - 1) + "true" + &")".repeat(MAX_CONDITION_DEPTH - 1);
        assert!(parse_condition(&at_limit).is_ok());
        let bangs = "!".repeat(MAX_CONDITION_DEPTH - 1) + "true";
        assert!(parse_condition(&bangs).is_ok());
        let long = format!("true{}", " ".repeat(MAX_CONDITION_LEN - 4));
        assert!(parse_condition(&long).is_ok());
        assert!(parse_condition(&format!("{long} ")).is_err());
        // A long member chain is not deep: its links are a list.
        let chain = "visitor".to_string() + &".a".repeat(400);
        assert!(parse_condition(&chain).is_ok());
        // Nor is a long `&&`: its operands are a list.
        let and = vec!["visitor.a"; 70].join(" && ");
        assert!(parse_condition(&and).is_ok());
    }

    /// Runs `f` on a thread with a 64 KiB stack.
    fn on_small_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(f)
            .expect("spawn")
            .join()
            .expect("no panic and no stack overflow");
    }

    #[test]
    fn deep_input_is_an_error_on_a_small_stack() {
        on_small_stack(|| {
            let n = MAX_CONDITION_LEN;
            let inputs = [
                "(".repeat(n),
                "!".repeat(n),
                "[".repeat(n),
                "(".repeat(n / 2) + &")".repeat(n / 2),
                "[".repeat(n / 2) + &"]".repeat(n / 2),
                "!(".repeat(n / 2),
                "visitor.a.includes(".repeat(n / 19),
                "visitor[".repeat(n / 8),
                "true ? ".repeat(n / 7),
                "visitor.a ? true : ".repeat(n / 19),
                "1 === ".repeat(n / 6),
                "1 < ".repeat(n / 4),
                "(visitor?.a).b".to_string() + &"[(visitor?.a)".repeat(n / 16),
            ];
            for src in inputs {
                let err = parse_condition(&src).expect_err(&src);
                assert!(
                    err.message.contains("nested too deeply"),
                    "{}…: {err}",
                    &src[..20]
                );
                assert!(err.position <= src.chars().count() + 1);
            }
        });
    }

    #[test]
    fn deepest_accepted_conditions_print_and_evaluate_on_a_small_stack() {
        on_small_stack(|| {
            let d = MAX_CONDITION_DEPTH;
            let context = context();
            let inputs = [
                "(".repeat(d - 1) + "visitor.claims.seats > 10" + &")".repeat(d - 1),
                "!".repeat(d - 2) + "visitor.claims.a",
                "[".repeat(d - 1) + &"]".repeat(d - 1) + " !== null",
                "visitor.claims.a ? true : ".repeat(d - 2) + "false",
                "visitor.claims.roles.includes(".repeat(d - 2) + "1" + &")".repeat(d - 2),
                "1 === ".repeat(d - 1) + "1",
            ];
            for src in inputs {
                let expr = parse_condition(&src).unwrap_or_else(|e| panic!("{src}: {e}"));
                let printed = expr.to_string();
                assert_eq!(parse(&printed), Ok(expr.clone()));
                let _ = evaluate(&expr, &context);
                assert!(evaluate_value(&expr, &context).is_ok());
            }
        });
    }

    #[test]
    fn hand_built_trees_deeper_than_the_bound_evaluate_to_false() {
        let mut expr = Expr::Bool(false);
        for _ in 0..200 {
            expr = Expr::Not(Box::new(expr));
        }
        assert!(evaluate_value(&expr, &Json::Null).is_err());
        assert!(!evaluate(&expr, &Json::Null));
    }

    fn value(src: &str) -> Result<Value<'static>, Thrown> {
        let expr: &'static Expr = Box::leak(Box::new(parse(src).expect(src)));
        let context: &'static Json = Box::leak(Box::new(context()));
        evaluate_value(expr, context)
    }

    #[test]
    fn values_follow_javascript() {
        let num = |src: &str| match value(src) {
            Ok(Value::Number(n)) => n,
            other => panic!("{src}: {other:?}"),
        };
        let boolean = |src: &str| match value(src) {
            Ok(Value::Bool(b)) => b,
            other => panic!("{src}: {other:?}"),
        };
        assert_eq!(num("visitor.claims.name.length"), 6.0);
        assert_eq!(num("'😀'.length"), 2.0);
        assert_eq!(num("visitor.claims.a ?? 3"), 3.0);
        assert_eq!(num("visitor.claims.score || 7"), 7.0);
        assert_eq!(num("visitor.claims.seats && 4"), 4.0);
        assert_eq!(num("visitor.claims.score ?? 7"), 0.0);
        assert_eq!(value("visitor.claims.nothing?.a"), Ok(Value::Undefined));
        assert_eq!(value("visitor.claims.missing"), Ok(Value::Undefined));
        assert_eq!(value("visitor.claims.seats.toString"), Ok(Value::Undefined));
        assert_eq!(value("visitor.claims.roles[5]"), Ok(Value::Undefined));
        assert_eq!(
            value("visitor.claims.name[0]"),
            Ok(Value::String("Z".into()))
        );
        assert!(value("visitor.claims.missing.a").is_err());
        assert!(value("visitor.claims.nothing.a").is_err());
        assert!(value("'a' in visitor.claims.plan").is_err());
        assert!(value("visitor.claims.seats.includes(1)").is_err());
        assert!(value("visitor.claims.roles.startsWith('a')").is_err());
        assert!(value("visitor.claims.missing.includes(1)").is_err());
        // Loose and strict equality.
        assert!(boolean("null == undefined"));
        assert!(!boolean("null === undefined"));
        assert!(!boolean("null == 0"));
        assert!(boolean("'' == 0"));
        assert!(boolean("' 12 ' == 12"));
        assert!(boolean("'0x10' == 16"));
        assert!(!boolean("'1e' == 1"));
        assert!(boolean("[] == false"));
        assert!(boolean("[1] == 1"));
        assert!(boolean("[[1, 2], [3]] == '1,2,3'"));
        assert!(boolean("[null, undefined] == ','"));
        assert!(!boolean("[1] == [1]"));
        assert!(!boolean("visitor.claims.unsigned === visitor.claims.flags"));
        assert!(boolean(
            "visitor.claims.unsigned === visitor.claims.unsigned"
        ));
        assert!(boolean("visitor.claims.unsigned == '[object Object]'"));
        assert!(boolean("-0 === 0"));
        // Relational.
        assert!(boolean("'B' < 'a'"));
        assert!(boolean("'\\uFFFF' > '😀'"), "UTF-16 code unit order");
        assert!(!boolean("visitor.claims.missing < 1"));
        assert!(!boolean("visitor.claims.missing >= 1"));
        assert!(boolean("null >= 0"));
        assert!(boolean("'10' > 9"));
        assert!(boolean("'abc' >= 'abc'"));
        // `in` on arrays and objects.
        assert!(boolean("1 in visitor.claims.roles"));
        assert!(!boolean("2 in visitor.claims.roles"));
        assert!(boolean("0 in visitor.claims.flags"));
        assert!(!boolean("'toString' in visitor.claims.flags"));
        assert!(boolean("'length' in [1]"));
        // includes: SameValueZero on arrays, ToString on strings.
        assert!(boolean(
            "[visitor.claims.unsigned].includes(visitor.claims.unsigned)"
        ));
        assert!(!boolean("[[1]].includes([1])"));
        assert!(boolean("[-0].includes(0)"));
        assert!(boolean("'a1b'.includes(1)"));
        assert!(boolean("'undefined'.startsWith(undefined)"));
        assert!(boolean("visitor.claims.email.endsWith('')"));
    }

    #[test]
    fn numbers_print_as_javascript_does() {
        for (n, s) in [
            (0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789.125, "123456789.125"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(number_to_js_string(n), s);
        }
        assert_eq!(Expr::Number(-0.0).to_string(), "-0");
    }

    #[test]
    fn errors_display_their_position() {
        let err = parse("visitor.claims.a &&").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unexpected end of condition, expected a value at position 20"
        );
    }

    fn reads_of(src: &str) -> Vec<String> {
        let mut out = BTreeSet::new();
        reads(&parse(src).unwrap(), &mut out);
        out.into_iter().map(|p| p.join(".")).collect()
    }

    #[test]
    fn reads_name_the_paths_a_condition_follows() {
        assert_eq!(
            reads_of("visitor.claims.unsigned.beta === true && !visitor.claims.isInternal"),
            ["visitor.claims.isInternal", "visitor.claims.unsigned.beta"]
        );
        // A method call or a computed key reads the value before it whole.
        assert_eq!(
            reads_of("visitor.claims.roles.includes(visitor.claims.role)"),
            ["visitor.claims.role", "visitor.claims.roles"]
        );
        assert_eq!(
            reads_of("visitor?.claims[visitor.claims.key] == 1"),
            ["visitor.claims", "visitor.claims.key"]
        );
        assert_eq!(reads_of("'pro' in visitor.claims"), ["visitor.claims"]);
        assert_eq!(reads_of("visitor ? true : page.x"), ["page.x", "visitor"]);
        assert_eq!(reads_of("['a', 'b'].includes('a')"), Vec::<String>::new());
    }

    #[test]
    fn projections_keep_what_conditions_can_tell_apart() {
        let conditions = [
            "visitor.claims.unsigned.beta === true",
            "!visitor.claims.isInternal",
            "!visitor.claims.missing.deeper",
            "visitor.claims.roles.includes('admin')",
            "visitor.claims.plan.startsWith('ent') && visitor.claims.seats > 10",
            "visitor.claims.plan.length === 10",
            "'pro' in visitor.claims.unsigned",
            "visitor.claims.unsigned.region == 'eu' || visitor.claims.gone?.x",
            "!!visitor.nothing",
        ];
        let mut paths = BTreeSet::new();
        for c in conditions {
            reads(&parse(c).unwrap(), &mut paths);
        }
        let mut noisy = context();
        noisy["visitor"]["claims"]["random"] = json!("x".repeat(50));
        noisy["visitor"]["claims"]["unsigned"]["other"] = json!(1);
        let projected = project(&noisy, &paths);
        for c in conditions {
            let e = parse(c).unwrap();
            assert_eq!(
                evaluate(&e, &noisy),
                evaluate(&e, &projected),
                "{c} on {projected}"
            );
        }
        // What nothing reads is gone; a claim read through `in` keeps its object whole.
        assert!(projected["visitor"]["claims"].get("random").is_none());
        assert_eq!(
            projected["visitor"]["claims"]["unsigned"]["other"],
            json!(1)
        );
        let mut other = noisy.clone();
        other["visitor"]["claims"]["random"] = json!("y");
        other["visitor"]["claims"]["another"] = json!(true);
        assert_eq!(project(&other, &paths), projected);
        // Nothing read: every visitor looks alike.
        assert_eq!(project(&noisy, &BTreeSet::new()), json!({}));
        assert_eq!(project(&noisy, &BTreeSet::from([Vec::new()])), noisy);
    }
}
