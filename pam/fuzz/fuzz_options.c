/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for the argument parser: the input is split into words at NUL bytes,
 * like the argv libpam hands the module. The result must always be within its limits. */
#include "../options.h"

#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char buf[8192];
    const char *argv[MAX_ARGS];
    int argc = 0;
    struct la_options o;
    if (size >= sizeof buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    la_options_parse(&o, argc, argv, NULL, NULL);
    if (o.socket[0] != '/' || strlen(o.socket) > LA_SOCKET_PATH_MAX)
        abort();
    if (o.policy != LA_POLICY_BIOMETRICS && o.policy != LA_POLICY_OWNER)
        abort();
    if (o.password_first != 0 && o.password_first != 1)
        abort();
    /* The terminal rule reads any string without going past its end. */
    (void)la_tty_names_terminal(argv[0]);
    if (o.timeout < LA_TIMEOUT_MIN || o.timeout > LA_TIMEOUT_MAX || o.tries < LA_TRIES_MIN ||
        o.tries > LA_TRIES_MAX)
        abort();
    if (o.have_reason && (strlen(o.reason) == 0 || strlen(o.reason) > LA_WIRE_MAX_FIELD ||
                          !la_wire_utf8_valid((const uint8_t *)o.reason, strlen(o.reason))))
        abort();
    return 0;
}
