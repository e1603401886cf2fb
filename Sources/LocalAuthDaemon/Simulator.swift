// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthProtocol

/// `localauthctl simulate`: drives libfprint's virtual device of a daemon started with
/// `--virtual-reader` (root only, see `Authorization`).
struct Simulator {
    let parts: DaemonParts

    nonisolated(nonsending) func simulate(action: String, argument: String?) async -> Answer {
        // English: the simulator is a test and demo tool (--virtual-reader), its answers name its commands.
        guard let socket = parts.virtualReaderSocket else {
            return Answer(.notSupported, english: "Simulation needs a daemon started with --virtual-reader")
        }
        let command: String
        switch (action, argument) {
        case ("touch", let id?) where Self.isSafeWord(id): command = "SCAN \(id)"
        case ("retry", let code): command = "RETRY \(Int(code ?? "0") ?? 0)"
        case ("error", let code): command = "ERROR \(Int(code ?? "0") ?? 0)"
        case ("unplug", nil): command = "UNPLUG"
        case ("finger-on", nil): command = "FINGER 1"
        case ("finger-off", nil): command = "FINGER 0"
        default:
            // English: the simulator's command words
            return Answer(
                .invalidRequest,
                english:
                    "Unknown simulation \(Echo.quoted(action + (argument.map { " " + $0 } ?? ""))); try touch ID, retry [CODE], error [CODE], unplug, finger-on, finger-off"
            )
        }
        // libfprint's virtual driver listens only while the device is open, and may leave a stale
        // socket file behind when it closes. Opening would queue behind an operation in flight,
        // which holds the device open anyway: so send first, and open only if nobody listens.
        let control = VirtualReaderControl(socketPath: socket)
        let send = { @Sendable () async in
            await Task.detached {
                // 30 s: a bound on a driver that never reads its command, not on a slow one.
                Result { () throws(VirtualReaderControl.Failure) in try control.send(command, timeoutMs: 30_000) }
            }
            .value
        }
        var outcome = await send()
        if case .failure(.unreachable) = outcome, let reader = parts.reader, let device = await parts.currentDevice() {
            // 30 s: this only bounds a hang (an open or close that never ends); a loaded machine's
            // slow open must not fail a test's touch (the 2 s default did, as "did not take").
            try? await reader.ensureOpen(deviceID: device.id, patienceMs: 30_000)
            outcome = await send()
        }
        if case .failure(let error) = outcome {
            // English: the virtual driver's protocol
            return Answer(.biometryNotAvailable, english: "The simulated reader did not take '\(command)': \(error)")
        }
        return Answer(.success, english: "Simulated: \(command)")  // English: the virtual driver's command
    }

    /// A scan id the virtual driver takes as one word: letters, digits, `-`, `_`, `.`; at most 64.
    static func isSafeWord(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D
                    || $0 == 0x5F || $0 == 0x2E
            }
    }
}
