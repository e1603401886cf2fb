// SPDX-License-Identifier: Apache-2.0
import CSystemd

/// The machine the daemon runs on, as systemd sees it.
public enum SystemdMachine {
    /// systemd runs the machine (`sd_booted()`: `/run/systemd/system/` exists).
    public static var isBooted: Bool { sd_booted() > 0 }
}
