/* SPDX-License-Identifier: Apache-2.0 */
/* glibc's gettext (libintl.h is part of glibc, not of Swift's Glibc module) and the locale calls
 * the clients' catalogue lookups need. Only LocalAuthLocalization imports this. */
#include <libintl.h>
#include <locale.h>
