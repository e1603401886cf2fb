// SPDX-License-Identifier: Apache-2.0
import Foundation
import LocalAuthProtocol
import Testing

@testable import LocalAuthentication

/// The types' shapes and values, which must be Apple's.
@Suite struct LAErrorTests {
    @Test func laErrorCode_rawValues_areApples() {
        let expected: [(LAError.Code, Int)] = [
            (.authenticationFailed, -1), (.userCancel, -2), (.userFallback, -3), (.systemCancel, -4),
            (.passcodeNotSet, -5), (.biometryNotAvailable, -6), (.biometryNotEnrolled, -7), (.biometryLockout, -8),
            (.appCancel, -9), (.invalidContext, -10), (.companionNotAvailable, -11), (.biometryNotPaired, -12),
            (.biometryDisconnected, -13), (.invalidDimensions, -14), (.notInteractive, -1004),
        ]
        for (code, raw) in expected { #expect(code.rawValue == raw, "\(code)") }
        #expect(LAError.biometryLockout.rawValue == -8)
        #expect(LAError.notInteractive.rawValue == -1004)
        #expect(LAErrorDomain == "com.apple.LocalAuthentication")
    }

    @Test func laErrorCode_everyDaemonCodeOfAnEvaluation_hasItsLAErrorCode() {
        let evaluationCodes: [ResultCode] = [
            .authenticationFailed, .userCancel, .userFallback, .systemCancel, .passcodeNotSet, .biometryNotAvailable,
            .biometryNotEnrolled, .biometryLockout, .appCancel, .invalidContext, .notInteractive,
        ]
        for code in evaluationCodes {
            let error = LAContext.error(for: RequestResult(code, "m"))
            #expect(error.code.rawValue == Int(code.rawValue))
            #expect(error.localizedDescription == "m")
        }
        // A management code has no LAError name: systemCancel, with the daemon's code kept.
        let busy = LAContext.error(for: RequestResult(.busy, "the reader is busy"))
        #expect(busy.code == .systemCancel)
        #expect(busy.errorUserInfo["LocalAuthDaemonResultCode"] as? Int == -1103)
    }

    @Test func laError_bridgesToNSErrorLikeApplesOverlay() {
        let error: Error = LAError(.biometryLockout, "Too many attempts: fingerprint locked")
        let ns = error as NSError
        #expect(ns.domain == LAErrorDomain)
        #expect(ns.code == LAError.biometryLockout.rawValue)
        #expect(error._code == -8)
        #expect(error._domain == LAErrorDomain)
        #expect(error.localizedDescription == "Too many attempts: fingerprint locked")
        #expect(LAError(_nsError: ns).code == .biometryLockout)
        #expect(LAError.errorDomain == LAErrorDomain)
    }

    @Test func laError_matchesInCatchClausesByCode() {
        func fail() throws { throw LAError(.userCancel, "Cancelled") }
        do {
            try fail()
            Issue.record("did not throw")
        } catch LAError.userCancel {
            // matched by the code pattern, as on Apple's systems
        } catch {
            Issue.record("not matched: \(error)")
        }
        do {
            try fail()
        } catch let error as LAError {
            #expect(error.code == .userCancel)
            #expect(error == LAError(_nsError: error._nsError))
        } catch {
            Issue.record("not an LAError")
        }
    }

    @available(*, deprecated, message: "uses Apple's deprecated aliases on purpose")
    @Test func deprecatedAliases_haveTheirSuccessorsValues() {
        #expect(LAError.touchIDNotAvailable == .biometryNotAvailable)
        #expect(LAError.touchIDNotEnrolled == .biometryNotEnrolled)
        #expect(LAError.touchIDLockout.rawValue == -8)
        #expect(LAError.Code.watchNotAvailable == .companionNotAvailable)
        #expect(LAPolicy.deviceOwnerAuthenticationWithWatch.rawValue == 3)
        #expect(LAPolicy.deviceOwnerAuthenticationWithBiometricsOrWatch.rawValue == 4)
        #expect(LABiometryType.LABiometryNone == .none)
    }

    @Test func laPolicyAndBiometryType_rawValues_areApples() {
        #expect(LAPolicy.deviceOwnerAuthenticationWithBiometrics.rawValue == 1)
        #expect(LAPolicy.deviceOwnerAuthentication.rawValue == 2)
        #expect(LAPolicy.deviceOwnerAuthenticationWithCompanion.rawValue == 3)
        #expect(LAPolicy.deviceOwnerAuthenticationWithBiometricsOrCompanion.rawValue == 4)
        #expect(LABiometryType.none.rawValue == 0)
        #expect(LABiometryType.touchID.rawValue == 1)
        #expect(LABiometryType.faceID.rawValue == 2)
        #expect(LABiometryType.opticID.rawValue == 4)
        #expect(LATouchIDAuthenticationMaximumAllowableReuseDuration == 300)
    }

    @Test func biometryType_fromTheProtocol_isTouchIDForAnyReader() {
        #expect(LAContext.biometryType(protocolValue: nil) == .none)
        #expect(LAContext.biometryType(protocolValue: 0) == .none)
        #expect(LAContext.biometryType(protocolValue: BiometryKind.touchID.rawValue) == .touchID)
        #expect(LAContext.biometryType(protocolValue: 1) == .touchID)
    }

    @Test func daemonPolicy_mapsApplesPolicies() {
        #expect(
            LAContext.daemonPolicy(.deviceOwnerAuthenticationWithBiometrics) == .deviceOwnerAuthenticationWithBiometrics
        )
        #expect(LAContext.daemonPolicy(.deviceOwnerAuthentication) == .deviceOwnerAuthentication)
        #expect(
            LAContext.daemonPolicy(.deviceOwnerAuthenticationWithBiometricsOrCompanion)
                == .deviceOwnerAuthenticationWithBiometrics)
        #expect(LAContext.daemonPolicy(.deviceOwnerAuthenticationWithCompanion) == nil)
    }
}
