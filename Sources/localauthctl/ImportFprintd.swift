// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization

struct ImportFprintd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import-fprintd",
        abstract: tr("Import the fingerprints fprintd stored (root only)."),
        discussion: tr(
            "Reads fprintd's prints (default: the daemon's fprintd-state-dir, /var/lib/fprint), checks each (a root-owned regular file of a print's size that libfprint reads, made on the reader, for the finger and the user its path names) and adds those an account does not have yet. fprintd's files are never changed. Each import and each skip is in the journal."
        ))
    @OptionGroup var connection: ClientOptions
    @Option(help: ArgumentHelp(tr("fprintd's state directory (<dir>/<user>/<driver>/<device>/<finger>).")))
    var from: String?
    func validate() throws {
        if let from, !from.hasPrefix("/") { throw ValidationError(tr("--from needs an absolute path")) }
    }
    func run() throws {
        try connection.run(.importFprintd(from: from))
    }
}
