// SPDX-License-Identifier: Apache-2.0
import FingerprintReader
import LocalAuthCore
import LocalAuthProtocol

/// The questions that change nothing: which readers there are (`devices`), the reader and a user's
/// enrolment (`status`), and whether a policy could be evaluated now (`canEvaluate`).
struct ReaderRequests {
    let parts: DaemonParts

    nonisolated(nonsending) func devices() async -> Answer {
        let devices = await parts.reader?.devices() ?? []
        let infos = devices.map {
            var caps: DeviceCapabilities = []
            if $0.supportsIdentify { caps.insert(.identify) }
            if $0.hasStorage { caps.insert(.storage) }
            if $0.isSwipe { caps.insert(.swipe) }
            return DeviceInfo(
                name: $0.name, driver: $0.driver, deviceId: $0.id, enrollStages: Int64($0.enrollStages),
                capabilities: caps)
        }
        return Answer(.success, Phrase.said("Readers: %s", .verbatim(String(devices.count))), .devices(infos))
    }

    /// The reader; with `user`, also that user's fingers, lockout and passcode.
    nonisolated(nonsending) func status(user: String?) async -> Answer {
        let device = await parts.currentDevice()
        var facts = Answer.StatusFacts(
            readerPresent: device != nil, biometryType: PolicyEvaluator.biometryType(readerAvailable: device != nil))
        guard let user else { return Answer(.success, Self.readerLine(device), .status(facts)) }
        let loaded = parts.loadState(user)
        let count = parts.enrolledPrints(user, on: device).count
        facts.account = Answer.AccountFacts(
            enrolledCount: count,
            biometryLocked: !loaded.readable
                || LockoutRules.biometryLocked(loaded.state, config: parts.configuration.lockout),
            passcodeSet: loaded.state.passcodeHash != nil,
            password: parts.passwordRequirement(user: user, userHasNoSession: nil), askedAtMs: parts.clock())
        return Answer(
            .success,
            Phrase.said(
                "%1$s; fingers enrolled for %2$s: %3$s", Self.readerLine(device), .verbatim(user),
                .verbatim(String(count))),
            .status(facts))
    }

    nonisolated(nonsending) func canEvaluate(
        policy: PolicyKind, user: String, whereabouts: Whereabouts, door: DoorContext = DoorContext()
    ) async -> Answer {
        let facts = await CallerFacts.gather(
            user: user, whereabouts: whereabouts, parts: parts, readerID: door.readerID, finger: door.finger)
        let decision = PolicyEvaluator.canEvaluate(
            policy: policy, state: facts.state, facts: facts.evaluation, config: parts.configuration.lockout,
            nowMs: parts.clock())
        // What LAEnvironment reports as builtInSensorInaccessible (the lid), beside the core's answer.
        return Answer(decision, facts.builtInSensorInaccessible ? .sensorInaccessible : .none)
    }

    /// "Reader: Virtual device for debugging", or "No reader".
    static func readerLine(_ device: ReaderDeviceInfo?) -> Phrase {
        device.map { Phrase.said("Reader: %s", .verbatim($0.name)) } ?? Phrase.said("No reader")
    }
}
