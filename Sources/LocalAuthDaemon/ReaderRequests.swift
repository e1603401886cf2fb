// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol

/// The questions that change nothing: which readers there are (`devices`), the reader and a user's
/// enrolment (`status`), and whether a policy could be evaluated now (`canEvaluate`).
struct ReaderRequests {
    let parts: DaemonParts

    nonisolated(nonsending) func devices() async -> RequestResult {
        let devices = await parts.reader?.devices() ?? []
        let extra = devices.map {
            var caps: DeviceCapabilities = []
            if $0.supportsIdentify { caps.insert(.identify) }
            if $0.hasStorage { caps.insert(.storage) }
            if $0.isSwipe { caps.insert(.swipe) }
            return DeviceInfo(
                name: $0.name, driver: $0.driver, deviceId: $0.id, enrollStages: Int64($0.enrollStages),
                capabilities: caps
            ).field
        }
        return RequestResult(.success, Phrase.said("Readers: %s", .verbatim(String(devices.count))), extra: extra)
    }

    /// The reader; with `user`, also that user's fingers, lockout and passcode.
    nonisolated(nonsending) func status(user: String?) async -> RequestResult {
        let device = await parts.currentDevice()
        var extra = Frame(.result)
        extra.append(.readerPresent, bool: device != nil)
        extra.append(.biometryType, int: PolicyEvaluator.biometryType(readerAvailable: device != nil).rawValue)
        guard let user else {
            return RequestResult(.success, Self.readerLine(device), extra: extra.fields)
        }
        let loaded = parts.loadState(user)
        let count = parts.enrolledPrints(user, on: device).count
        extra.append(.enrolledCount, int: Int64(count))
        extra.append(
            .biometryLocked,
            bool: !loaded.readable || LockoutRules.biometryLocked(loaded.state, config: parts.configuration.lockout))
        extra.append(.passcodeSet, bool: loaded.state.passcodeHash != nil)
        parts.appendPasswordStatus(user: user, to: &extra)
        return RequestResult(
            .success,
            Phrase.said(
                "%1$s; fingers enrolled for %2$s: %3$s", Self.readerLine(device), .verbatim(user),
                .verbatim(String(count))),
            extra: extra.fields)
    }

    nonisolated(nonsending) func canEvaluate(
        policy: PolicyKind, user: String, whereabouts: Whereabouts, door: DoorContext = DoorContext()
    ) async -> RequestResult {
        let facts = await CallerFacts.gather(
            user: user, whereabouts: whereabouts, parts: parts, readerID: door.readerID, finger: door.finger)
        var result = PolicyEvaluator.canEvaluate(
            policy: policy, state: facts.state, facts: facts.evaluation, config: parts.configuration.lockout,
            nowMs: parts.clock()
        ).result
        // What LAEnvironment reports as builtInSensorInaccessible (the lid), beside the core's answer.
        if facts.builtInSensorInaccessible {
            var extra = Frame(.result, result.extra)
            extra.append(.sensorInaccessible, bool: true)
            result.extra = extra.fields
        }
        return result
    }

    /// "Reader: Virtual device for debugging", or "No reader".
    static func readerLine(_ device: ReaderDeviceInfo?) -> Phrase {
        device.map { Phrase.said("Reader: %s", .verbatim($0.name)) } ?? Phrase.said("No reader")
    }
}
