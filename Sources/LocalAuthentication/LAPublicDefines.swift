// SPDX-License-Identifier: Apache-2.0
// The `#define`s of Apple's `LAPublicDefines.h`, as Swift imports them: read-only globals of type `Int32`
// (the error domain a `String`), with Apple's names and values. `kLAPolicyDeviceOwnerAuthenticationWith-
// WristDetection` (watchOS) and `kLACompanionType…` (companion devices) have no meaning on Linux.

public let kLAErrorDomain: String = "com.apple.LocalAuthentication"

public let kLAPolicyDeviceOwnerAuthenticationWithBiometrics: Int32 = 1
public let kLAPolicyDeviceOwnerAuthentication: Int32 = 2
public let kLAPolicyDeviceOwnerAuthenticationWithWatch: Int32 = 3
public let kLAPolicyDeviceOwnerAuthenticationWithBiometricsOrWatch: Int32 = 4
public let kLAPolicyDeviceOwnerAuthenticationWithCompanion: Int32 = 3
public let kLAPolicyDeviceOwnerAuthenticationWithBiometricsOrCompanion: Int32 = 4

public let kLABiometryTypeNone: Int32 = 0
public let kLABiometryTypeTouchID: Int32 = 1 << 0
public let kLABiometryTypeFaceID: Int32 = 1 << 1
public let kLABiometryTypeOpticID: Int32 = 1 << 2

public let kLACredentialTypeApplicationPassword: Int32 = 0
/// Apple's spelling: no "Type" in this one.
public let kLACredentialSmartCardPIN: Int32 = -3

public let kLAErrorAuthenticationFailed: Int32 = -1
public let kLAErrorUserCancel: Int32 = -2
public let kLAErrorUserFallback: Int32 = -3
public let kLAErrorSystemCancel: Int32 = -4
public let kLAErrorPasscodeNotSet: Int32 = -5
public let kLAErrorTouchIDNotAvailable: Int32 = -6
public let kLAErrorTouchIDNotEnrolled: Int32 = -7
public let kLAErrorTouchIDLockout: Int32 = -8
public let kLAErrorAppCancel: Int32 = -9
public let kLAErrorInvalidContext: Int32 = -10
public let kLAErrorWatchNotAvailable: Int32 = -11
public let kLAErrorNotInteractive: Int32 = -1004
public let kLAErrorBiometryNotAvailable: Int32 = -6
public let kLAErrorBiometryNotEnrolled: Int32 = -7
public let kLAErrorBiometryLockout: Int32 = -8
public let kLAErrorBiometryNotPaired: Int32 = -12
public let kLAErrorBiometryDisconnected: Int32 = -13
public let kLAErrorInvalidDimensions: Int32 = -14
public let kLAErrorCompanionNotAvailable: Int32 = -11
