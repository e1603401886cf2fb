// SPDX-License-Identifier: Apache-2.0

extension EnrollmentStore {
    /// The store's rule for account names, for callers that must refuse a name before acting on it.
    public static func isValidUserName(_ name: String) -> Bool { Validation.isSafeName(name) }
}
