// SPDX-License-Identifier: Apache-2.0

/// What the daemon remembers about one user between evaluations, persisted by the store
/// before any result that depends on it is sent.
///
/// Times are milliseconds since the Unix epoch as read from the injected clock.
public struct UserAuthState: Equatable, Sendable {
    /// Consecutive non-matching fingers across evaluations; reset by a match or a correct passcode.
    public var fingerFailures: Int
    /// Set when `fingerFailures` reaches the limit; cleared by a correct passcode or an administrator.
    public var biometryLocked: Bool
    /// Consecutive wrong passcodes; reset by a correct passcode or an administrator.
    public var passcodeFailures: Int
    /// While the clock is before this, passcodes are refused. 0 when there is no delay.
    public var passcodeLockedUntilMs: Int64
    /// The latest clock reading seen for this user: a clock set backwards never shortens a delay.
    public var lastSeenMs: Int64
    /// The passcode's yescrypt hash (`$y$…`), nil when no passcode is set.
    public var passcodeHash: String?
    /// `evaluatedPolicyDomainState`: 32 random bytes drawn anew whenever the set of enrolled
    /// fingers changes, so it reveals nothing about the prints. Empty before the first enrolment.
    public var domainState: [UInt8]

    public init(
        fingerFailures: Int = 0, biometryLocked: Bool = false, passcodeFailures: Int = 0,
        passcodeLockedUntilMs: Int64 = 0, lastSeenMs: Int64 = 0, passcodeHash: String? = nil,
        domainState: [UInt8] = []
    ) {
        self.fingerFailures = fingerFailures
        self.biometryLocked = biometryLocked
        self.passcodeFailures = passcodeFailures
        self.passcodeLockedUntilMs = passcodeLockedUntilMs
        self.lastSeenMs = lastSeenMs
        self.passcodeHash = passcodeHash
        self.domainState = domainState
    }
}

/// The lockout rules; defaults as Apple's, each configurable in `/etc/localauthd.conf`.
public struct LockoutConfig: Equatable, Sendable {
    /// Consecutive non-matching fingers that lock biometrics.
    public var fingerAttempts: Int
    /// Consecutive wrong passcodes before the first delay.
    public var passcodeAttempts: Int
    /// Delays in seconds after the `passcodeAttempts`-th wrong passcode, the next one, …;
    /// the last entry repeats for every further failure.
    public var passcodeDelays: [Int64]
    /// The longest reuse window a caller may ask for, in seconds.
    public var maxReuseSeconds: Int64

    public init(
        fingerAttempts: Int = 5, passcodeAttempts: Int = 6, passcodeDelays: [Int64] = [60, 300, 900, 3600],
        maxReuseSeconds: Int64 = 300
    ) {
        self.fingerAttempts = fingerAttempts
        self.passcodeAttempts = passcodeAttempts
        self.passcodeDelays = passcodeDelays
        self.maxReuseSeconds = maxReuseSeconds
    }
}
