// SPDX-License-Identifier: Apache-2.0
// Unplug, hotplug, linger and shutdown: each in a child process of its own (an exit test), because an unplugged
// virtual reader never comes back to the process's one libfprint context, and shutdown ends that context.

import Glibc
import Synchronization
import Testing

@testable import FingerprintReader

/// Ends the child process with `code` unless `condition` holds.
private func require(_ condition: Bool, _ code: Int32, _ message: @autoclosure () -> String) {
    if !condition {
        // The child's issues reach the parent's report, with this comment.
        Issue.record("check \(code) failed: \(message())")
        exit(code)
    }
}

/// Shows what a failed child wrote to stderr (the `require` message and libfprint's warnings).
private func reportChildErrors(_ result: ExitTest.Result?) {
    guard let result, result.exitStatus != .exitCode(0) else { return }
    print(String(decoding: result.standardErrorContent, as: UTF8.self))
}

/// In the child: one exported virtual device, and a reader that lists it.
private func readerWithOneDevice(lingerMs: Int?) async throws -> (VirtualSockets, FingerprintReader, ReaderDeviceInfo) {
    let sockets = VirtualSockets.make()
    sockets.export(device: true, storage: false, image: false)
    let reader = try await FingerprintReader(lingerMs: lingerMs)
    let devices = await reader.devices()
    require(devices.count == 1, 10, "\(devices)")
    return (sockets, reader, devices[0])
}

/// Ends the child: the reader shut down, success.
private func finish(_ reader: FingerprintReader) async -> Never {
    await reader.shutdown()
    exit(0)
}

@Suite(.serialized, .timeLimit(.minutes(1)))
struct LifecycleTests {
    @Test func verify_whenUnpluggedMidway_throwsRemovedAndReportsHotplugRemoval() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (sockets, reader, device) = try await readerWithOneDevice(lingerMs: nil)
            let hotplug = reader.hotplugEvents()
            let enrolled = try await enrollVirtual(reader, device, socket: sockets.device, scanID: "unplug")

            let (verifying, _) = await reader.verifyUntilFingerNeeded(deviceID: device.id, print: enrolled)
            try sendCommand("UNPLUG", to: sockets.device)
            let outcome = await verifying.value
            require(outcome == .failure(.removed), 11, "\(outcome)")
            // Not listed from the removal on, before libfprint drops it (a status said "present").
            let listed = await reader.devices()
            require(listed.isEmpty, 17, "listed after its removal: \(listed)")

            var events = hotplug.makeAsyncIterator()
            let event = await events.next()
            require(event == .removed(device), 12, "\(String(describing: event))")
            let remaining = await reader.devices()
            require(remaining.isEmpty, 13, "\(remaining)")

            // The daemon goes on: the reader answers, just without that device.
            let after = startTask { try await reader.verify(deviceID: device.id, print: enrolled, progress: { _ in }) }
            let afterOutcome = await after.value
            require(afterOutcome == .failure(.noDevice), 14, "\(afterOutcome)")
            await finish(reader)
        }
        reportChildErrors(result)
    }

    @Test func lookForReadersIfNone_afterUnplug_findsTheReaderAgainAndItVerifies() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (sockets, reader, device) = try await readerWithOneDevice(lingerMs: nil)
            let hotplug = reader.hotplugEvents()
            var events = hotplug.makeAsyncIterator()
            let enrolled = try await enrollVirtual(reader, device, socket: sockets.device, scanID: "again")

            // While a reader is known, looking again changes nothing (no reader listed twice).
            reader.lookForReadersIfNone(minimumIntervalMs: 0)
            let stillOne = await reader.devices()
            require(stillOne.count == 1, 11, "\(stillOne)")

            try sendCommand("UNPLUG", to: sockets.device)
            let removed = await events.next()
            require(removed == .removed(device), 12, "\(String(describing: removed))")
            require(await reader.devices().isEmpty, 13, "still listed after unplug")

            reader.lookForReadersIfNone(minimumIntervalMs: 0)
            let added = await events.next()
            guard case .added(let again) = added else {
                require(false, 14, "\(String(describing: added))")
                return
            }
            let now = await reader.devices()
            require(now == [again], 15, "\(now)")
            // The print enrolled before the unplug verifies on the reader found again.
            let (verifying, _) = await reader.verifyUntilFingerNeeded(deviceID: again.id, print: enrolled)
            try sendCommand("SCAN again", to: sockets.device)
            let outcome = await verifying.value
            require(outcome == .success(.match), 16, "\(outcome)")
            await finish(reader)
        }
        reportChildErrors(result)
    }

    /// A stop while libfprint enumerates again (a reader-less daemon looks again at each request that
    /// wants a reader): the close waited for the enumeration, then ran before the enumeration's own last
    /// use of its `FpContext`, which it had just released — the daemon died of SIGILL at
    /// `fp_context_get_devices` on its way out (4 of 17 runs of the LocalAuthentication suites, 2026-11-28).
    @Test func shutdown_whileLookingForReadersAgain_endsCleanly() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            // No virtual device, whatever the parent process exported for its own tests.
            for name in ["FP_VIRTUAL_DEVICE", "FP_VIRTUAL_DEVICE_STORAGE", "FP_VIRTUAL_IMAGE"] { unsetenv(name) }
            for round in 0..<40 {
                let reader = try await FingerprintReader(lingerMs: nil)
                require(await reader.devices().isEmpty, 40, "a reader on a machine without one")
                reader.lookForReadersIfNone(minimumIntervalMs: 0)
                usleep(UInt32(round % 20) * 250)  // the stop lands at a different moment of the enumeration each round
                await reader.shutdown()
            }
            exit(0)
        }
        reportChildErrors(result)
    }

    @Test func post_whileTheGLibThreadIteratesTheMainContextItself_runsOnlyAfterThatCallReturns() async {
        // What fp_context_enumerate does: it iterates the global main context inside our posted work. Work
        // posted meanwhile (a close(), a verify) must not run nested inside it.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let thread = GLibThread()
            let log = Mutex<[String]>([])
            await thread.run {
                thread.exclusively {
                    thread.post { log.withLock { $0.append("posted work") } }
                    thread.iterateMainContext(times: 10)
                    log.withLock { $0.append("the iterating call returns") }
                }
            }
            await thread.run {}
            let order = log.withLock { $0 }
            require(order == ["the iterating call returns", "posted work"], 30, "\(order)")
            thread.stop()
            exit(0)
        }
        reportChildErrors(result)
    }

    @Test func ensureOpen_afterLinger_closesTheReader() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (sockets, reader, device) = try await readerWithOneDevice(lingerMs: 50)
            try await reader.ensureOpen(deviceID: device.id)
            // Open: the driver listens on its socket.
            try sendCommand("SET_KEEP_ALIVE 0", to: sockets.device)
            // After the linger the driver has closed and stops listening; poll for that, bounded.
            var closed = false
            var polls = 0
            while !closed && polls < 200 {
                usleep(5000)
                polls += 1
                if let fd = try? connectUnixSocket(sockets.device, timeoutMs: 0) { close(fd) } else { closed = true }
            }
            require(closed, 20, "the reader was still open after the linger")
            // And it opens again on demand, held open while the enrolment's scans are sent: with a
            // 50 ms linger, a loaded machine closed it between two of them and the enrolment (the
            // driver refused the next SCAN, and the error thrown in the child killed it: SIGILL).
            try await reader.hold(deviceID: device.id)
            let print = try await enrollVirtual(reader, device, socket: sockets.device, scanID: "again")
            try sendCommand("SCAN again", to: sockets.device)
            let outcome = try await reader.verify(deviceID: device.id, print: print, progress: { _ in })
            require(outcome == .match, 21, "\(outcome)")
            await finish(reader)
        }
        reportChildErrors(result)
    }

    /// Opening the reader (`ensureOpen`, here through `hold`, which keeps it open after) while the
    /// linger's close runs waits for that close and opens the reader again, so the simulator's SCAN
    /// reaches a reader that keeps it. Before, it took the busy queue and the still-set open flag for
    /// "an operation holds the reader open" and returned at once: the SCAN went to the closing driver,
    /// which dropped it ("Could not process command"), and the verify found no finger. The driver's
    /// own SLEEP holds the close for a second, so the window is wide, not a matter of load.
    @Test func hold_whileTheLingerCloses_waitsForTheCloseAndOpensAgain() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (sockets, reader, device) = try await readerWithOneDevice(lingerMs: 50)
            try await reader.hold(deviceID: device.id)  // no linger close while enrolling
            let print = try await enrollVirtual(reader, device, socket: sockets.device, scanID: "closing")
            try sendCommand("SET_KEEP_ALIVE 0", to: sockets.device)
            // The close the linger starts waits in the driver for 1 s, its socket still listening.
            try sendCommand("SLEEP 1000", to: sockets.device)
            reader.releaseHold(deviceID: device.id)
            usleep(300_000)  // the linger (50 ms) has started the close
            let started = ContinuousClock.now
            try await reader.hold(deviceID: device.id)
            let waited = ContinuousClock.now - started
            try sendCommand("SCAN closing", to: sockets.device)
            // Bounded: a verify whose SCAN was lost waits for a finger that never comes.
            let verify = startTask { try await reader.verify(deviceID: device.id, print: print, progress: { _ in }) }
            let watchdog = Task {
                try await Task.sleep(for: .seconds(10))
                verify.cancel()
            }
            let outcome = await verify.value
            watchdog.cancel()
            require(outcome == .success(.match), 41, "\(outcome) (the reader was open again after \(waited))")
            await finish(reader)
        }
        reportChildErrors(result)
    }

    /// Inputs for the coming scans keep the reader open past its linger until scans have taken them
    /// all, one each; then it lingers and closes. libfprint's virtual driver drops a SCAN still waiting
    /// when it closes, so a simulated touch given before its request waited only as long as the linger
    /// (and the second of two touches for two tries, once the first scan had ended).
    @Test func keepOpenForInput_keepsTheReaderOpenUntilScansTookEveryInputThenLingers() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (sockets, reader, device) = try await readerWithOneDevice(lingerMs: 50)
            try await reader.hold(deviceID: device.id)  // no linger close while enrolling
            let print = try await enrollVirtual(reader, device, socket: sockets.device, scanID: "waits")
            reader.releaseHold(deviceID: device.id)
            for scan in ["other", "waits"] {
                try await reader.keepOpenForInput(deviceID: device.id)
                try sendCommand("SCAN \(scan)", to: sockets.device)
            }
            for expected in [VerifyOutcome.noMatch, .match] {
                usleep(300_000)  // six times the linger
                // Bounded: a verify whose SCAN was dropped waits for a finger that never comes.
                let verify = startTask {
                    try await reader.verify(deviceID: device.id, print: print, progress: { _ in })
                }
                let watchdog = Task {
                    try await Task.sleep(for: .seconds(15))
                    verify.cancel()
                }
                let outcome = await verify.value
                watchdog.cancel()
                require(outcome == .success(expected), 50, "\(outcome), expected \(expected)")
            }
            var closed = false
            var polls = 0
            while !closed && polls < 3000 {  // a hang bound: 15 s, 300 times the linger
                usleep(5000)
                polls += 1
                if let fd = try? connectUnixSocket(sockets.device, timeoutMs: 0) { close(fd) } else { closed = true }
            }
            require(closed, 51, "the reader was still open 15 s after the scans")
            await finish(reader)
        }
        reportChildErrors(result)
    }

    @Test func shutdown_withVerifyWaitingForFinger_cancelsItAndAllowsANewReader() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (sockets, reader, device) = try await readerWithOneDevice(lingerMs: 2000)
            let hotplug = reader.hotplugEvents()
            let print = try await enrollVirtual(reader, device, socket: sockets.device, scanID: "shutdown")
            let (verifying, _) = await reader.verifyUntilFingerNeeded(deviceID: device.id, print: print)
            await reader.shutdown()
            let outcome = await verifying.value
            require(outcome == .failure(.cancelled), 30, "\(outcome)")
            var events = hotplug.makeAsyncIterator()
            let lastEvent = await events.next()
            require(lastEvent == nil, 31, "hotplug stream still open: \(String(describing: lastEvent))")
            let late = startTask { try await reader.verify(deviceID: device.id, print: print, progress: { _ in }) }
            let lateOutcome = await late.value
            require(lateOutcome == .failure(.noDevice), 32, "\(lateOutcome)")

            // One reader at a time, but a new one after shutdown.
            let second = try await FingerprintReader()
            let secondDevices = await second.devices()
            require(secondDevices.count == 1, 33, "\(secondDevices)")
            await finish(second)
        }
        reportChildErrors(result)
    }

    @Test func suspend_thenResume_leavesTheReaderWorking() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (sockets, reader, device) = try await readerWithOneDevice(lingerMs: nil)
            let print = try await enrollVirtual(reader, device, socket: sockets.device, scanID: "sleepy")
            await reader.suspend()
            await reader.resume()
            try sendCommand("SCAN sleepy", to: sockets.device)
            let outcome = try await reader.verify(deviceID: device.id, print: print, progress: { _ in })
            require(outcome == .match, 40, "\(outcome)")
            await finish(reader)
        }
        reportChildErrors(result)
    }
}
