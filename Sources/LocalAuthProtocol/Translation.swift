// SPDX-License-Identifier: Apache-2.0

/// A value for a template's conversion: `%s` takes text, `%d` (`%u`, `%lld`, `%zu`) a number.
public enum TemplateArgument: Equatable, Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    case text(String)
    case number(Int64)

    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .number(value) }

    var rendered: String {
        switch self {
        case .text(let s): s
        case .number(let n): String(n)
        }
    }
}

/// Where a client's catalogue answers: English (the msgids themselves) here, gettext in
/// `LocalAuthLocalization`. Every line a person reads passes through one, so the catalogue (po/) has
/// one entry per line, in C's printf syntax (`%s`, `%d`, `%1$s` when a language reorders).
public protocol Translator: Sendable {
    /// The line for `msgid` in the translator's language.
    func text(_ msgid: String) -> String
    /// The line for `count` (ngettext's choice of plural form).
    func plural(_ singular: String, _ plural: String, count: Int64) -> String
}

extension Translator {
    /// `msgid` translated, its conversions filled from `arguments`. xgettext finds the calls by this
    /// name (po/po.mk): the template must be one string literal.
    public func tr(_ msgid: StaticString, _ arguments: TemplateArgument...) -> String {
        Template.fill(text(msgid.description), arguments)
    }

    /// The plural form for `count`, filled from `arguments` (`count` is not added: name it there).
    public func trn(
        _ singular: StaticString, _ plural: StaticString, _ count: Int64, _ arguments: TemplateArgument...
    ) -> String {
        Template.fill(self.plural(singular.description, plural.description, count: count), arguments)
    }
}

/// The English lines: the catalogue's msgids. The daemon's `message` fields, its audit lines and its
/// journal records are rendered with it.
public struct EnglishText: Translator {
    public init() {}
    public func text(_ msgid: String) -> String { msgid }
    public func plural(_ singular: String, _ plural: String, count: Int64) -> String {
        count == 1 ? singular : plural
    }
}

/// printf's conversions, as far as the catalogue uses them, over `TemplateArgument`s: `%s`, `%d`, `%i`,
/// `%u`, `%lld`, `%zu` (any length modifier), a precision on `%s` (`%.100s`: at most that many
/// characters), positional `%2$s`, and `%%`. Never traps: a conversion it does not know is kept as it
/// stands, and one without an argument becomes empty — a damaged catalogue garbles a line, no more.
public enum Template {
    public static func fill(_ template: String, _ arguments: [TemplateArgument]) -> String {
        var out = ""
        var next = 0
        var rest = Substring(template)
        while let percent = rest.firstIndex(of: "%") {
            out.append(contentsOf: rest[..<percent])
            var i = rest.index(after: percent)
            guard i < rest.endIndex else {
                out += "%"
                return out
            }
            if rest[i] == "%" {
                out += "%"
                rest = rest[rest.index(after: i)...]
                continue
            }
            // %N$…: a positional argument.
            var position: Int?
            var digits = i
            while digits < rest.endIndex, let d = rest[digits].wholeNumberValue, rest[digits].isASCII {
                position = min((position ?? 0) * 10 + d, 1 << 20)
                digits = rest.index(after: digits)
            }
            if position != nil, digits < rest.endIndex, rest[digits] == "$" {
                i = rest.index(after: digits)
            } else {
                position = nil
            }
            var precision: Int?
            if i < rest.endIndex, rest[i] == "." {
                i = rest.index(after: i)
                var p = 0
                while i < rest.endIndex, let d = rest[i].wholeNumberValue, rest[i].isASCII {
                    p = min(p * 10 + d, 1 << 20)
                    i = rest.index(after: i)
                }
                precision = p
            }
            while i < rest.endIndex, "hlzjt".contains(rest[i]) { i = rest.index(after: i) }
            guard i < rest.endIndex, "sdiu".contains(rest[i]) else {
                // Not a conversion of ours: kept as written.
                out.append(contentsOf: rest[percent..<i])
                rest = rest[i...]
                continue
            }
            let index = position.map { $0 - 1 } ?? next
            next = index + 1
            var value = arguments.indices.contains(index) ? arguments[index].rendered : ""
            if let precision, value.count > precision { value = String(value.prefix(precision)) }
            out += value
            rest = rest[rest.index(after: i)...]
        }
        out.append(contentsOf: rest)
        return out
    }
}
