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
        _ = bound
        guard applicationLeftMessagesAlone, let environment = environmentLocale.locale else {
            return body().map { String(cString: $0) }
        }
        let previous = uselocale(environment)
        defer { uselocale(previous) }
        return body().map { String(cString: $0) }
    }

    /// Whether the application's global LC_MESSAGES is still the "C" locale every program starts in.
    private static var applicationLeftMessagesAlone: Bool {
        guard let name = setlocale(LC_MESSAGES, nil) else { return true }
        let current = String(cString: name)
        return current == "C" || current == "POSIX"
    }

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
    /// the usual places; the first that holds a localauth catalogue.
    static func catalogueDirectory() -> String {
        var candidates: [String] = []
        if let executable = executablePath() {
            let bin = directoryName(executable)
            candidates.append(bin + "/../share/locale")
            candidates.append(bin + "/../../share/locale")
        }
        candidates += ["/usr/local/share/locale", "/usr/share/locale"]
        return candidates.first(where: holdsCatalogue) ?? "/usr/share/locale"
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

    private static func holdsCatalogue(_ directory: String) -> Bool {
        guard let dir = opendir(directory) else { return false }
        defer { closedir(dir) }
        var info = stat()
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasPrefix(".") { continue }
            if stat(directory + "/" + name + "/LC_MESSAGES/" + domain + ".mo", &info) == 0 { return true }
        }
        return false
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
    /// English `message` (an older daemon, or a phrase newer than this client).
    public func localizedMessage(style: PhraseStyle = PhraseStyle()) -> String {
        phrase?.text(Gettext.shared, style: style) ?? message
    }
}

extension RequestResult {
    /// The result's line in the person's language: its phrase through the catalogue, else the
    /// daemon's English `message`.
    public func localizedMessage(style: PhraseStyle = PhraseStyle()) -> String {
        phrase?.text(Gettext.shared, style: style) ?? message
    }
}
