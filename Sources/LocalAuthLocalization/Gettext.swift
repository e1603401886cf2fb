// SPDX-License-Identifier: Apache-2.0
// glibc's gettext for the clients (localauthctl, the LocalAuthentication library): the catalogue of
// text domain "localauth" in the language LANGUAGE, LC_ALL, LC_MESSAGES and LANG name, as gettext
// reads them. Never calls setlocale: a library must not change its application's locale.

import CGettext
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// The catalogue's lines through `dgettext` (`dngettext` for plurals).
///
/// When the application has set its own `LC_MESSAGES` (it called `setlocale`), that locale is used, as
/// gettext in C would. When it has not (a Swift program starts in the "C" locale), the lookup runs in a
/// thread-local copy of the locale the environment names (`newlocale` + `uselocale`), so the person
/// still reads their language and the application's locale is left alone.
public struct Gettext: Translator {
    public static let domain = "localauth"
    public static let shared = Gettext()

    public init() {}

    public func text(_ msgid: String) -> String {
        // dgettext answers the msgid's own pointer when it has no translation: the text is copied
        // while that buffer lives.
        msgid.withCString { id in Self.lookup { dgettext(Self.domain, id) } } ?? msgid
    }

    public func plural(_ singular: String, _ plural: String, count: Int64) -> String {
        let n = UInt(clamping: count < 0 ? -count : count)
        return singular.withCString { one in
            plural.withCString { many in Self.lookup { dngettext(Self.domain, one, many, n) } }
        } ?? EnglishText().plural(singular, plural, count: count)
    }

    /// The directory the catalogues were found in (`<dir>/<language>/LC_MESSAGES/localauth.mo`).
    public static var directory: String { bound.directory }

    private static func lookup(_ body: () -> UnsafeMutablePointer<CChar>?) -> String? {
        let leftAlone = applicationLeftMessagesAlone
        // In the C locale gettext answers every msgid with itself (LANGUAGE is not read there): no
        // catalogue to find, so none is looked for.
        if leftAlone && isPlain(environmentMessagesLocale) { return nil }
        _ = bound
        guard leftAlone, let environment = environmentLocale.locale else {
            return body().map { String(cString: $0) }
        }
        let previous = uselocale(environment)
        defer { uselocale(previous) }
        return body().map { String(cString: $0) }
    }

    /// Whether the application's global LC_MESSAGES is still the "C" locale every program starts in.
    private static var applicationLeftMessagesAlone: Bool { isPlain(applicationMessagesLocale) }

    private static var applicationMessagesLocale: String {
        setlocale(LC_MESSAGES, nil).map { String(cString: $0) } ?? "C"
    }

    private static func isPlain(_ locale: String) -> Bool { locale == "C" || locale == "POSIX" }

    /// The LC_MESSAGES locale the environment names, as setlocale would read it: LC_ALL, else
    /// LC_MESSAGES, else LANG, else "C". Read once, as `environmentLocale` is, not at every line.
    static let environmentMessagesLocale: String = {
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = getenv(name).map({ String(cString: $0) }), !value.isEmpty { return value }
        }
        return "C"
    }()

    private struct EnvironmentLocale: @unchecked Sendable {
        /// Only ever used, never freed or changed: `uselocale` of it on any thread is safe.
        let locale: locale_t?
    }

    /// The LC_MESSAGES the environment names (LC_ALL, LC_MESSAGES, LANG); nil when that locale is
    /// not installed, so the lines stay English, as gettext leaves them in a program whose
    /// setlocale failed.
    private static let environmentLocale = EnvironmentLocale(locale: newlocale(Int32(1 << LC_MESSAGES), "", nil))

    private struct Binding: Sendable { let directory: String }

    /// bindtextdomain and UTF-8 output, once per process; they concern our text domain alone.
    private static let bound: Binding = {
        let directory = catalogueDirectory()
        bindtextdomain(domain, directory)
        bind_textdomain_codeset(domain, "UTF-8")
        return Binding(directory: directory)
    }()

    /// `$(PREFIX)/share/locale` of the installation the running program belongs to (the executable in
    /// `$(PREFIX)/bin` or `sbin`), then the build tree's `.build/share/locale` (`make locale`), then
    /// the usual places; the first that holds a localauth catalogue in a language the person reads.
    static func catalogueDirectory() -> String {
        var candidates: [String] = []
        if let executable = executablePath() {
            let bin = directoryName(executable)
            candidates.append(bin + "/../share/locale")
            candidates.append(bin + "/../../share/locale")
        }
        candidates += ["/usr/local/share/locale", "/usr/share/locale"]
        let locale = applicationLeftMessagesAlone ? environmentMessagesLocale : applicationMessagesLocale
        let languages = catalogueNames(language: getenv("LANGUAGE").map { String(cString: $0) }, locale: locale)
        var info = stat()
        return candidates.first { directory in
            languages.contains { stat(directory + "/" + $0 + "/LC_MESSAGES/" + domain + ".mo", &info) == 0 }
        } ?? "/usr/share/locale"
    }

    /// The catalogue names gettext may open for LANGUAGE's list and the locale, each also without
    /// its codeset, its modifier and its territory (`de_DE.UTF-8@euro` … `de`), in that order.
    static func catalogueNames(language: String?, locale: String) -> [String] {
        var names: [String] = []
        for entry in (language ?? "").split(separator: ":").map(String.init) + [locale] where !entry.isEmpty {
            let noModifier = String(entry.prefix { $0 != "@" })
            let noCodeset = String(noModifier.prefix { $0 != "." })
            let languageOnly = String(noCodeset.prefix { $0 != "_" })
            for name in [entry, noModifier, noCodeset, languageOnly] where !names.contains(name) {
                names.append(name)
            }
        }
        return names
    }

    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func directoryName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// `msgid` in the person's language, its conversions filled (`Gettext.shared.tr`). xgettext finds
/// the calls by this name: the template must be one string literal.
public func tr(_ msgid: StaticString, _ arguments: TemplateArgument...) -> String {
    Template.fill(Gettext.shared.text(msgid.description), arguments)
}

/// The plural form for `count` in the person's language, filled from `arguments`.
public func trn(
    _ singular: StaticString, _ plural: StaticString, _ count: Int64, _ arguments: TemplateArgument...
) -> String {
    Template.fill(Gettext.shared.plural(singular.description, plural.description, count: count), arguments)
}

extension Event {
    /// The event's line in the person's language: its phrase through the catalogue, else the daemon's
    /// English `message` (an older daemon, or a phrase newer than this client). Printable: no control
    /// character of a name another process chose reaches the terminal (`Echo.printable`).
    public func localizedMessage(style: PhraseStyle = PhraseStyle()) -> String {
        Echo.printable(phrase?.text(Gettext.shared, style: style) ?? message)
    }
}

extension RequestResult {
    /// The result's line in the person's language: its phrase through the catalogue, else the
    /// daemon's English `message`; printable, as an event's.
    public func localizedMessage(style: PhraseStyle = PhraseStyle()) -> String {
        Echo.printable(phrase?.text(Gettext.shared, style: style) ?? message)
    }
}
