// SPDX-License-Identifier: Apache-2.0
// libsystemd: socket activation, readiness notification, the journal, sd-login, sd-bus.
#pragma once
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>
