// SPDX-License-Identifier: Apache-2.0
// Every declaration that docs/apple-api.md marks for Linux, used once as code written for Apple's
// platforms uses it: Apple's names, labels, nesting, `async` getters, both forms of every method that
// takes a completion handler, `@Sendable` handlers, optionality. Each use carries its row's ID
// (`// [ID]` after the code); scripts/check-apple-api.py (run by `make lint`) fails when a row marked *yes* has no
// use here. Compiling this file is the test. The tests at the end run what needs no daemon.
//
// Nothing here may use a Linux-only name (`linuxPrompt`, the test hooks) or `@testable` access: this
// file imports the library as an app does.
import Foundation
import LocalAuthentication
import Observation
import Testing

// MARK: LAContext

/// CTX: the classic context, as a login screen uses it.
@available(*, deprecated, message: "uses Apple's deprecated names on purpose")
func appleContextSpellings() async {
    let context = LAContext()  // [CTX-01]
    var error: NSError?
    let can: Bool = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)  // [CTX-02]
    _ = can
    context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Log in") {  // [CTX-03]
        (success: Bool, error: (any Error)?) in
        _ = (success, error)
    }
    let reply: @Sendable (Bool, (any Error)?) -> Void = { _, _ in }
    context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Log in", reply: reply)  // [CTX-03]
    let ok: Bool? = try? await context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "In")  // [CTX-04]
    _ = ok
    context.invalidate()  // [CTX-07]
    let accepted: Bool = context.setCredential(Data("pw".utf8), type: .applicationPassword)  // [CTX-08]
    let cleared: Bool = context.setCredential(nil, type: .applicationPassword)  // [CTX-08]
    let isSet: Bool = context.isCredentialSet(.applicationPassword)  // [CTX-09]
    _ = (accepted, cleared, isSet)
    context.localizedFallbackTitle = "Use Password"  // [CTX-10]
    let fallback: String? = context.localizedFallbackTitle  // [CTX-10]
    context.localizedFallbackTitle = nil
    context.localizedCancelTitle = "Not Now"  // [CTX-11]
    let cancel: String? = context.localizedCancelTitle  // [CTX-11]
    context.localizedReason = "Unlock"  // [CTX-12]
    let reason: String = context.localizedReason  // [CTX-12]
    context.touchIDAuthenticationAllowableReuseDuration = 10  // [CTX-13]
    let reuse: TimeInterval = context.touchIDAuthenticationAllowableReuseDuration  // [CTX-13]
    context.interactionNotAllowed = true  // [CTX-14]
    let notAllowed: Bool = context.interactionNotAllowed  // [CTX-14]
    let type: LABiometryType = context.biometryType  // [CTX-15]
    let old: Data? = context.evaluatedPolicyDomainState  // [CTX-16]
    let domain: LADomainState = context.domainState  // [CTX-17]
    context.maxBiometryFailures = 3  // [CTX-18]
    let maxFailures: NSNumber? = context.maxBiometryFailures  // [CTX-18]
    let observable: any Observable = context  // [CTX-19]
    let cap: TimeInterval = LATouchIDAuthenticationMaximumAllowableReuseDuration  // [CTX-21]
    _ = (fallback, cancel, reason, reuse, notAllowed, type, old, domain, maxFailures, observable, cap)
}

// MARK: Enumerations

/// POL, BIO, CRED: the enumerations, with an exhaustive `switch` over Apple's cases (no `default`).
@available(*, deprecated, message: "uses Apple's deprecated names on purpose")
func applePolicyName(_ policy: LAPolicy) -> String {
    switch policy {  // [POL-01]
    case .deviceOwnerAuthenticationWithBiometrics: "biometrics"  // [POL-02]
    case .deviceOwnerAuthentication: "owner"  // [POL-03]
    case .deviceOwnerAuthenticationWithWatch: "watch"  // [POL-06]
    case .deviceOwnerAuthenticationWithBiometricsOrWatch: "biometrics or watch"  // [POL-07]
    }
}

@available(*, deprecated, message: "uses Apple's deprecated names on purpose")
func applePolicyAliases() -> [LAPolicy?] {
    [
        LAPolicy(rawValue: 2),  // [POL-01]
        .deviceOwnerAuthenticationWithCompanion,  // [POL-04]
        .deviceOwnerAuthenticationWithBiometricsOrCompanion,  // [POL-05]
    ]
}

/// The companion policies in a pattern (matched with `==`, as on Apple's platforms).
func appleCompanionPattern(_ policy: LAPolicy) -> Bool {
    switch policy {
    case .deviceOwnerAuthenticationWithCompanion: true  // [POL-04]
    case .deviceOwnerAuthenticationWithBiometricsOrCompanion: true  // [POL-05]
    default: false
    }
}

@available(*, deprecated, message: "uses Apple's deprecated names on purpose")
func appleBiometryName(_ type: LABiometryType) -> String {
    switch type {  // [BIO-01]
    case .none: "none"  // [BIO-02]
    case .touchID: "Touch ID"  // [BIO-03]
    case .faceID: "Face ID"  // [BIO-04]
    case .opticID: "Optic ID"  // [BIO-05]
    }
}

@available(*, deprecated, message: "uses Apple's deprecated names on purpose")
func appleBiometryOldName() -> [LABiometryType?] {
    [LABiometryType(rawValue: 1), LABiometryType.LABiometryNone]  // [BIO-01] [BIO-06]
}

func appleCredentialName(_ type: LACredentialType) -> String {
    switch type {  // [CRED-01]
    case .applicationPassword: "password"  // [CRED-02]
    case .smartCardPIN: "PIN"  // [CRED-03]
    }
}

let appleCredentialFromRaw: LACredentialType? = LACredentialType(rawValue: -3)  // [CRED-01]

// MARK: LAError

/// ERR and ERRC: an exhaustive `switch` over Apple's `LAError.Code` cases (no `default`): it compiles only
/// when the cases are Apple's (the `touchID…` and `watch…` names), not the newer aliases.
@available(*, deprecated, message: "uses Apple's deprecated names on purpose")
func appleErrorName(_ code: LAError.Code) -> String {
    switch code {  // [ERR-07]
    case .authenticationFailed: "failed"  // [ERRC-01]
    case .userCancel: "cancelled"  // [ERRC-02]
    case .userFallback: "fallback"  // [ERRC-03]
    case .systemCancel: "system"  // [ERRC-04]
    case .passcodeNotSet: "no passcode"  // [ERRC-05]
    case .touchIDNotAvailable: "not available"  // [ERRC-16]
    case .touchIDNotEnrolled: "not enrolled"  // [ERRC-17]
    case .touchIDLockout: "locked out"  // [ERRC-18]
    case .appCancel: "app"  // [ERRC-09]
    case .invalidContext: "invalid"  // [ERRC-10]
    case .watchNotAvailable: "no watch"  // [ERRC-19]
    case .biometryNotPaired: "not paired"  // [ERRC-12]
    case .biometryDisconnected: "disconnected"  // [ERRC-13]
    case .invalidDimensions: "dimensions"  // [ERRC-14]
    case .notInteractive: "not interactive"  // [ERRC-15]
    }
}

/// The current names, which are static properties of `LAError.Code` (and of `LAError`), in patterns.
func appleErrorMessage(_ error: any Error) -> String {
    guard let error = error as? LAError else { return "other" }
    switch error.code {  // [ERR-04]
    case .biometryNotAvailable: return "not available"  // [ERRC-06]
    case .biometryNotEnrolled: return "not enrolled"  // [ERRC-07]
    case .biometryLockout: return "locked out"  // [ERRC-08]
    case .companionNotAvailable: return "no companion"  // [ERRC-11]
    case LAError.userCancel: return "cancelled"  // [ERR-06] [ERR-08]
    default: return "other"
    }
}

func appleErrorSpellings() -> [Any] {
    let error = LAError(.userCancel)  // [ERR-01] [ERR-03]
    let lockout: LAError.Code = LAError.biometryLockout  // [ERR-08]
    let withInfo = LAError(lockout, userInfo: [NSLocalizedDescriptionKey: "Locked"])  // [ERR-03]
    let domain: String = LAError.errorDomain  // [ERR-02]
    let code: LAError.Code = error.code  // [ERR-04]
    let info: [String: Any] = withInfo.userInfo  // [ERR-05]
    let number: Int = withInfo.errorCode  // [ERR-05]
    let errorInfo: [String: Any] = withInfo.errorUserInfo  // [ERR-05]
    let text: String = withInfo.localizedDescription  // [ERR-05]
    let bridged = (error as NSError).domain == LAErrorDomain  // [CONST-01]
    let asAny: any CustomNSError & Hashable & Sendable = error  // [ERR-01]
    let fromRaw: LAError.Code? = LAError.Code(rawValue: -2)  // [ERR-07]
    let staticCodes: [LAError.Code] = [
        LAError.companionNotAvailable, LAError.biometryNotAvailable, LAError.notInteractive,  // [ERR-08]
    ]
    do {
        throw error
    } catch LAError.userCancel {  // [ERR-06]
    } catch {}
    return [domain, code, info, number, errorInfo, text, bridged, asAny, fromRaw as Any, staticCodes]
}

// MARK: LAPublicDefines.h

/// KLA: the `#define`s as `Int32` globals, compared as Apple's samples compare them.
func appleDefines(_ error: NSError) -> [Any] {
    let domain: String = kLAErrorDomain  // [KLA-01]
    let policies: [Int32] = [
        kLAPolicyDeviceOwnerAuthenticationWithBiometrics,  // [KLA-02]
        kLAPolicyDeviceOwnerAuthentication,  // [KLA-03]
        kLAPolicyDeviceOwnerAuthenticationWithWatch,  // [KLA-04]
        kLAPolicyDeviceOwnerAuthenticationWithBiometricsOrWatch,  // [KLA-05]
        kLAPolicyDeviceOwnerAuthenticationWithCompanion,  // [KLA-06]
        kLAPolicyDeviceOwnerAuthenticationWithBiometricsOrCompanion,  // [KLA-07]
    ]
    let biometry: [Int32] = [
        kLABiometryTypeNone,  // [KLA-09]
        kLABiometryTypeTouchID,  // [KLA-10]
        kLABiometryTypeFaceID,  // [KLA-11]
        kLABiometryTypeOpticID,  // [KLA-12]
    ]
    let credentials: [Int32] = [
        kLACredentialTypeApplicationPassword,  // [KLA-13]
        kLACredentialSmartCardPIN,  // [KLA-14]
    ]
    let cancelled = error.code == Int(kLAErrorUserCancel)  // [KLA-16]
    let errors: [Int32] = [
        kLAErrorAuthenticationFailed,  // [KLA-15]
        kLAErrorUserFallback,  // [KLA-17]
        kLAErrorSystemCancel,  // [KLA-18]
        kLAErrorPasscodeNotSet,  // [KLA-19]
        kLAErrorTouchIDNotAvailable,  // [KLA-20]
        kLAErrorTouchIDNotEnrolled,  // [KLA-21]
        kLAErrorTouchIDLockout,  // [KLA-22]
        kLAErrorAppCancel,  // [KLA-23]
        kLAErrorInvalidContext,  // [KLA-24]
        kLAErrorWatchNotAvailable,  // [KLA-25]
        kLAErrorNotInteractive,  // [KLA-26]
        kLAErrorBiometryNotAvailable,  // [KLA-27]
        kLAErrorBiometryNotEnrolled,  // [KLA-28]
        kLAErrorBiometryLockout,  // [KLA-29]
        kLAErrorBiometryNotPaired,  // [KLA-30]
        kLAErrorBiometryDisconnected,  // [KLA-31]
        kLAErrorInvalidDimensions,  // [KLA-32]
        kLAErrorCompanionNotAvailable,  // [KLA-33]
    ]
    return [domain, policies, biometry, credentials, cancelled, errors]
}

// MARK: LADomainState

/// DOM: the macOS 15 shape of the domain state.
func appleDomainState(_ context: LAContext) -> [Any] {
    let state: LADomainState = context.domainState  // [DOM-01]
    let biometry: LADomainStateBiometry = state.biometry  // [DOM-02] [DOM-05]
    let hash: Data? = state.stateHash  // [DOM-04]
    let type: LABiometryType = biometry.biometryType  // [DOM-06]
    let biometryHash: Data? = context.domainState.biometry.stateHash  // [DOM-07]
    let object: NSObject = state  // [DOM-01]
    return [hash as Any, type, biometryHash as Any, object]
}

// MARK: LAEnvironment

/// ENV: an observer as Apple's samples write it, with the nested names.
final class AppleEnvironmentObserver: NSObject, LAEnvironment.Observer, @unchecked Sendable {  // [ENV-06]
    let lock = NSLock()
    var changes = 0

    func environment(_ environment: LAEnvironment, stateDidChangeFromOldState old: LAEnvironment.State) {  // [ENV-07]
        let now: LAEnvironment.State = environment.state
        _ = (now, old)
        lock.withLock { changes += 1 }
    }
}

/// An observer that leaves out the optional method.
final class AppleSilentObserver: NSObject, LAEnvironment.Observer {}  // [ENV-06]

func appleEnvironmentSpellings(_ observer: AppleEnvironmentObserver) -> [Any] {
    let environment: LAEnvironment = LAEnvironment.currentUser  // [ENV-01] [ENV-02]
    environment.addObserver(observer)  // [ENV-04]
    environment.removeObserver(observer)  // [ENV-05]
    let state: LAEnvironment.State = environment.state  // [ENV-03] [ENV-08]
    let copy = state.copy()  // [ENV-08]
    let biometry: LAEnvironment.MechanismBiometry? = state.biometry  // [ENV-09] [ENV-17]
    let password: LAEnvironment.MechanismUserPassword? = state.userPassword  // [ENV-10] [ENV-23]
    let companions: [LAEnvironment.MechanismCompanion] = state.companions  // [ENV-11] [ENV-25]
    let all: [LAEnvironment.Mechanism] = state.allMechanisms  // [ENV-12] [ENV-13]
    var parts: [Any] = [copy, companions.map { $0.stateHash as Any }]  // [ENV-27]
    for mechanism in all {
        let usable: Bool = mechanism.isUsable  // [ENV-14]
        let name: String = mechanism.localizedName  // [ENV-15]
        let icon: String = mechanism.iconSystemName  // [ENV-16]
        parts.append((usable, name, icon))
    }
    if let biometry {
        let type: LABiometryType = biometry.biometryType  // [ENV-18]
        let enrolled: Bool = biometry.isEnrolled  // [ENV-19]
        let locked: Bool = biometry.isLockedOut  // [ENV-20]
        let hash: Data = biometry.stateHash  // [ENV-21]
        let lidClosed: Bool = biometry.builtInSensorInaccessible  // [ENV-22]
        parts.append((type, enrolled, locked, hash, lidClosed))
    }
    if let password {
        let isSet: Bool = password.isSet  // [ENV-24]
        parts.append(isSet)
    }
    for companion in companions {
        let hash: Data? = companion.stateHash  // [ENV-27]
        let base: LAEnvironment.Mechanism = companion  // [ENV-25]
        parts.append((hash as Any, base))
    }
    return parts
}

// MARK: LARight

/// RIGHT: a right that is not persisted, in both forms of each method.
func appleRightSpellings() async {
    let right = LARight()  // [RIGHT-01] [RIGHT-02]
    let biometric = LARight(requirement: .biometry)  // [RIGHT-03]
    let state: LARight.State = right.state  // [RIGHT-04] [RIGHT-12]
    right.tag = 7  // [RIGHT-05]
    let tag: Int = right.tag  // [RIGHT-05]
    _ = (state, tag)
    right.authorize(localizedReason: "Confirm") { (error: (any Error)?) in  // [RIGHT-06]
        _ = error
    }
    let handler: @Sendable ((any Error)?) -> Void = { _ in }
    right.authorize(localizedReason: "Confirm", completion: handler)  // [RIGHT-06]
    try? await right.authorize(localizedReason: "Confirm")  // [RIGHT-07]
    biometric.checkCanAuthorize { (error: (any Error)?) in  // [RIGHT-08]
        _ = error
    }
    biometric.checkCanAuthorize(completion: handler)  // [RIGHT-08]
    try? await biometric.checkCanAuthorize()  // [RIGHT-09]
    right.deauthorize {}  // [RIGHT-10]
    let done: @Sendable () -> Void = {}
    right.deauthorize(completion: done)  // [RIGHT-10]
    await right.deauthorize()  // [RIGHT-11]
}

func appleRightStateName(_ state: LARight.State) -> String {
    switch state {  // [RIGHT-12]
    case .unknown: "unknown"  // [RIGHT-13]
    case .authorizing: "authorizing"  // [RIGHT-14]
    case .authorized: "authorized"  // [RIGHT-15]
    case .notAuthorized: "not authorized"  // [RIGHT-16]
    }
}

let appleRightStateFromRaw: LARight.State? = LARight.State(rawValue: 2)  // [RIGHT-12]

// MARK: LARightStore, LAPersistedRight, LASecret

/// STORE, PR, SEC: the store's methods in both forms, Apple's `rawData` getter and `loadData(completion:)`.
func appleStoreSpellings(secret: Data) async throws {
    let store: LARightStore = LARightStore.shared  // [STORE-01] [STORE-02]
    let object: NSObject = store  // [STORE-01]
    _ = object
    let right = LARight()

    store.saveRight(right, identifier: "a") { (saved: LAPersistedRight?, error: (any Error)?) in  // [STORE-05]
        _ = (saved, error)
    }
    let saved: LAPersistedRight = try await store.saveRight(right, identifier: "a")  // [STORE-06]
    store.saveRight(right, identifier: "b", secret: secret) { saved, error in  // [STORE-07]
        _ = (saved, error)
    }
    let withSecret: LAPersistedRight = try await store.saveRight(right, identifier: "b", secret: secret)  // [STORE-08]
    store.right(forIdentifier: "b") { (fetched: LAPersistedRight?, error: (any Error)?) in  // [STORE-03]
        _ = (fetched, error)
    }
    let fetched: LAPersistedRight = try await store.right(forIdentifier: "b")  // [STORE-04]

    let asRight: LARight = fetched  // [PR-01]
    let key: LAPrivateKey = fetched.key  // [PR-02]
    let secretObject: LASecret = fetched.secret  // [PR-03] [SEC-01]
    _ = (asRight, key)

    try await fetched.authorize(localizedReason: "Open")
    secretObject.loadData { (data: Data?, error: (any Error)?) in  // [SEC-02]
        _ = (data, error)
    }
    let loaded: @Sendable (Data?, (any Error)?) -> Void = { _, _ in }
    fetched.secret.loadData(completion: loaded)  // [SEC-02]
    let raw: Data = try await fetched.secret.rawData  // [SEC-03]
    _ = raw

    store.removeRight(saved) { (error: (any Error)?) in  // [STORE-09]
        _ = error
    }
    try await store.removeRight(withSecret)  // [STORE-10]
    store.removeRight(forIdentifier: "a") { error in  // [STORE-11]
        _ = error
    }
    try await store.removeRight(forIdentifier: "b")  // [STORE-12]
    store.removeAllRights { (error: (any Error)?) in  // [STORE-13]
        _ = error
    }
    try await store.removeAllRights()  // [STORE-14]
}

// MARK: LAPrivateKey, LAPublicKey

/// PRIV, PUB: the key operations in both forms, Apple's `bytes` getter, `[AnyHashable: Any]` parameters.
func appleKeySpellings(_ right: LAPersistedRight, peer: Data) async throws {
    let key: LAPrivateKey = right.key  // [PRIV-01]
    let object: NSObject = key  // [PRIV-01]
    let publicKey: LAPublicKey = key.publicKey  // [PRIV-02] [PUB-01]
    _ = object

    let message = Data("transfer".utf8)
    let canSign: Bool = key.canSign(using: .ecdsaSignatureMessageX962SHA256)  // [PRIV-03]
    let canDecrypt: Bool = key.canDecrypt(using: .eciesEncryptionStandardVariableIVX963SHA256AESGCM)  // [PRIV-04]
    let canExchange: Bool = key.canExchangeKeys(using: .ecdhKeyExchangeStandard)  // [PRIV-05]
    _ = (canSign, canDecrypt, canExchange)

    key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256) {  // [PRIV-06]
        (signature: Data?, error: (any Error)?) in
        _ = (signature, error)
    }
    let signature: Data = try await key.sign(message, algorithm: .ecdsaSignatureMessageX962SHA256)  // [PRIV-07]

    let canEncrypt: Bool = publicKey.canEncrypt(using: .eciesEncryptionStandardVariableIVX963SHA256AESGCM)  // [PUB-04]
    let canVerify: Bool = publicKey.canVerify(using: .ecdsaSignatureMessageX962SHA256)  // [PUB-05]
    _ = (canEncrypt, canVerify)
    publicKey.encrypt(message, algorithm: .eciesEncryptionStandardVariableIVX963SHA256AESGCM) {  // [PUB-06]
        (ciphertext: Data?, error: (any Error)?) in
        _ = (ciphertext, error)
    }
    let ciphertext: Data = try await publicKey.encrypt(  // [PUB-07]
        message, algorithm: .eciesEncryptionStandardVariableIVX963SHA256AESGCM)
    key.decrypt(ciphertext, algorithm: .eciesEncryptionStandardVariableIVX963SHA256AESGCM) {  // [PRIV-08]
        (plaintext: Data?, error: (any Error)?) in
        _ = (plaintext, error)
    }
    let plaintext: Data = try await key.decrypt(  // [PRIV-09]
        ciphertext, algorithm: .eciesEncryptionStandardVariableIVX963SHA256AESGCM)
    _ = plaintext

    publicKey.verify(message, signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256) {  // [PUB-08]
        (error: (any Error)?) in
        _ = error
    }
    try await publicKey.verify(message, signature: signature, algorithm: .ecdsaSignatureMessageX962SHA256)  // [PUB-09]

    let parameters: [AnyHashable: Any] = [
        SecKeyKeyExchangeParameter.requestedSize.rawValue: 32, SecKeyKeyExchangeParameter.sharedInfo.rawValue: Data(),
    ]
    key.exchangeKeys(publicKey: peer, algorithm: .ecdhKeyExchangeStandard, parameters: parameters) {  // [PRIV-10]
        (shared: Data?, error: (any Error)?) in
        _ = (shared, error)
    }
    let shared: Data = try await key.exchangeKeys(  // [PRIV-11]
        publicKey: peer, algorithm: .ecdhKeyExchangeStandard, parameters: [:])
    _ = shared

    publicKey.exportBytes { (bytes: Data?, error: (any Error)?) in  // [PUB-02]
        _ = (bytes, error)
    }
    let bytes: Data = try await publicKey.bytes  // [PUB-03]
    _ = bytes
}

// MARK: LAAuthenticationRequirement, LABiometryFallbackRequirement

/// REQ, FB: the requirements as class properties and the fallback function.
func appleRequirementSpellings() -> [LARight] {
    let any: LAAuthenticationRequirement = .default  // [REQ-01] [REQ-02]
    let biometry: LAAuthenticationRequirement = LAAuthenticationRequirement.biometry  // [REQ-03]
    let current: LAAuthenticationRequirement = .biometryCurrentSet  // [REQ-04]
    let fallback: LABiometryFallbackRequirement = .default  // [FB-01] [FB-02]
    let passcode: LABiometryFallbackRequirement = LABiometryFallbackRequirement.devicePasscode  // [FB-03]
    let withFallback: LAAuthenticationRequirement = .biometry(fallback: passcode)  // [REQ-05]
    let withDefault = LAAuthenticationRequirement.biometry(fallback: fallback)  // [REQ-05]
    let objects: [NSObject] = [any, fallback]  // [REQ-01] [FB-01]
    _ = objects
    return [any, biometry, current, withFallback, withDefault].map { LARight(requirement: $0) }
}

// MARK: What runs without a daemon

@Suite struct AppleSpellingsTests {
    @Test func publicDefines_haveApplesValues() {
        #expect(kLAErrorDomain == "com.apple.LocalAuthentication" && kLAErrorDomain == LAErrorDomain)
        #expect(
            [
                kLAPolicyDeviceOwnerAuthenticationWithBiometrics, kLAPolicyDeviceOwnerAuthentication,
                kLAPolicyDeviceOwnerAuthenticationWithWatch, kLAPolicyDeviceOwnerAuthenticationWithBiometricsOrWatch,
                kLAPolicyDeviceOwnerAuthenticationWithCompanion,
                kLAPolicyDeviceOwnerAuthenticationWithBiometricsOrCompanion,
            ] == [1, 2, 3, 4, 3, 4])
        #expect(
            [kLABiometryTypeNone, kLABiometryTypeTouchID, kLABiometryTypeFaceID, kLABiometryTypeOpticID] == [
                0, 1, 2, 4,
            ])
        #expect([kLACredentialTypeApplicationPassword, kLACredentialSmartCardPIN] == [0, -3])
        #expect(
            [
                kLAErrorAuthenticationFailed, kLAErrorUserCancel, kLAErrorUserFallback, kLAErrorSystemCancel,
                kLAErrorPasscodeNotSet, kLAErrorTouchIDNotAvailable, kLAErrorTouchIDNotEnrolled,
                kLAErrorTouchIDLockout, kLAErrorAppCancel, kLAErrorInvalidContext, kLAErrorWatchNotAvailable,
                kLAErrorNotInteractive, kLAErrorBiometryNotAvailable, kLAErrorBiometryNotEnrolled,
                kLAErrorBiometryLockout, kLAErrorBiometryNotPaired, kLAErrorBiometryDisconnected,
                kLAErrorInvalidDimensions, kLAErrorCompanionNotAvailable,
            ] == [-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -1004, -6, -7, -8, -12, -13, -14, -11])
        // Each error constant is its `LAError.Code`'s raw value.
        #expect(LAError.Code(rawValue: Int(kLAErrorBiometryLockout)) == .biometryLockout)
        #expect(LAError.Code(rawValue: Int(kLAErrorCompanionNotAvailable)) == .companionNotAvailable)
    }

    @available(*, deprecated, message: "uses Apple's deprecated names on purpose")
    @Test func exhaustiveSwitches_overApplesCases_takeBothNames() {
        #expect(appleErrorName(.biometryNotAvailable) == "not available")
        #expect(appleErrorName(LAError.Code(rawValue: -11)!) == "no watch")
        #expect(appleErrorMessage(LAError(.touchIDLockout)) == "locked out")
        #expect(appleErrorMessage(LAError(.watchNotAvailable)) == "no companion")
        #expect(appleErrorMessage(LAError(.userCancel)) == "cancelled")
        #expect(applePolicyName(.deviceOwnerAuthenticationWithCompanion) == "watch")
        #expect(applePolicyName(.deviceOwnerAuthenticationWithBiometricsOrCompanion) == "biometrics or watch")
        #expect(appleCompanionPattern(.deviceOwnerAuthenticationWithWatch))
        #expect(!appleCompanionPattern(.deviceOwnerAuthentication))
        #expect(appleBiometryOldName() == [.touchID, LABiometryType.none])
        #expect(appleRightStateFromRaw == .authorized && appleRightStateName(.notAuthorized) == "not authorized")
        #expect(appleCredentialFromRaw == .smartCardPIN)
    }

    @Test func errorBridging_isFoundations() {
        let error = LAError(LAError.biometryLockout, userInfo: [NSLocalizedDescriptionKey: "Locked"])
        #expect(error.errorCode == -8 && error.localizedDescription == "Locked")
        #expect((error as NSError).domain == LAErrorDomain && LAError.errorDomain == LAErrorDomain)
        #expect(error.userInfo[NSLocalizedDescriptionKey] as? String == "Locked")
    }

    @available(*, deprecated, message: "uses Apple's deprecated names on purpose")
    @Test func maxBiometryFailures_isKeptAndChangesNothing() {
        let context = LAContext()
        #expect(context.maxBiometryFailures == nil)
        context.maxBiometryFailures = 3
        #expect(context.maxBiometryFailures == 3)
    }
}
