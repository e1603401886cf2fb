// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthClient
import LocalAuthLocalization
import LocalAuthProtocol

#if canImport(Glibc)
    import Glibc
#endif

struct ClientOptions: ParsableArguments {
    @Option(help: ArgumentHelp(tr("The daemon's socket (default: $LOCALAUTHD_SOCKET, else /run/localauthd/socket).")))
    var socket: String?

    @Flag(name: [.short, .long], help: ArgumentHelp(tr("Print nothing but errors.")))
    var quiet = false

    /// Connects, runs `request`, prints its events and result, and exits with the documented code.
    func run(
        _ request: Request, timeoutMs: Int64 = 330_000, print printResult: (RequestResult) -> Void = { _ in }
    ) throws -> Never {
        Self.run(request, socket: socket, quiet: quiet, timeoutMs: timeoutMs, print: printResult)
    }

    /// The same for a command line `FastPath` has parsed (no ArgumentParser value exists then).
    static func run(
        _ request: Request, socket: String?, quiet: Bool, timeoutMs: Int64 = 330_000,
        print printResult: (RequestResult) -> Void = { _ in }
    ) -> Never {
        perform(request, socket: socket, timeoutMs: timeoutMs) { event in
            if !quiet { show(event) }
        } success: { result in
            if !quiet {
                print(result.localizedMessage())
                printResult(result)
            }
        }
    }

    /// Connects, runs `request` and exits with the documented code: `onEvent` sees every event (the
    /// passcode is read from the terminal when asked for), `success` the result of a request that
    /// succeeded; a failure is said on standard error.
    static func perform(
        _ request: Request, socket: String?, timeoutMs: Int64, onEvent: (Event) -> Void,
        success: (RequestResult) -> Void
    ) -> Never {
        let connection: DaemonConnection
        do {
            connection = try DaemonConnection(
                socketPath: socket ?? DaemonConnection.defaultSocketPath, clientName: "localauthctl")
        } catch {
            fail(describe(error), code: Exit.unreachable)
        }
        do {
            let result = try connection.perform(request, timeoutMs: timeoutMs) { event in
                onEvent(event)
                guard event.kind == .passcodeNeeded else { return nil }
                return readPasscode(prompt: tr("Passcode: ")).map { .passcode($0) } ?? .cancel
            }
            if result.isSuccess {
                success(result)
            } else {
                printError(
                    "localauthctl: \(result.localizedMessage()) (\(result.resultCode?.name ?? String(result.code)))")
            }
            Glibc.exit(Exit.code(for: result.code))
        } catch {
            fail(describe(error), code: Exit.unreachable)
        }
    }

    private static func show(_ event: Event) {
        switch event.kind {
        case .enrollStage:
            let done = Int(event.stage ?? 0)
            let all = max(Int(event.stages ?? 1), 1)
            let bar =
                String(repeating: "#", count: done * 20 / all) + String(repeating: ".", count: 20 - done * 20 / all)
            print("[\(bar)] " + tr("stage %1$d of %2$d", .number(Int64(done)), .number(Int64(all))))
        case .passcodeNeeded: break
        default: print(event.localizedMessage())
        }
    }
}

struct UserOption: ParsableArguments {
    @Option(help: ArgumentHelp(tr("The account (default: your own).")))
    var user: String?
}

func fingerName(_ raw: String?) throws -> FingerName? {
    guard let raw else { return nil }
    guard let finger = FingerName(rawValue: raw) else {
        throw ValidationError(
            tr(
                "'%1$s' is not a finger name; use one of: %2$s", .text(raw),
                .text(FingerName.allCases.map(\.rawValue).joined(separator: ", "))))
    }
    return finger
}
