// SPDX-License-Identifier: Apache-2.0
// libxcrypt: crypt_r and crypt_gensalt_rn for yescrypt passcode hashes.
#pragma once
#include <crypt.h>
