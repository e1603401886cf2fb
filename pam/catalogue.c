/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The words of phrases.c: the catalogue's English templates (msgids, the same as
 * Sources/LocalAuthProtocol/PhraseText.swift) per phrase identifier, finger, hint and cancel code,
 * and durations. phrases.c parses a phrase and picks the line; the lines are here.
 */
#include "catalogue.h"

#include <stdio.h>
#include <string.h>

#include "fill.h"
#include "messages.h"

/* A plural line for n, filled with n. */
void la_plural(char *out, size_t cap, const char *line, long long n)
{
    char number[32];
    snprintf(number, sizeof number, "%lld", n);
    la_fill(out, cap, line, (const char *const[]){number}, 1);
}

/* "45 seconds", "15 minutes", "1 hour": rounded up, as Phrase.duration. */
void la_duration(long long ms, char *out, size_t cap)
{
    long long seconds = ms / 1000 + (ms % 1000 > 0 ? 1 : 0), minutes;
    if (seconds < 1)
        seconds = 1;
    if (seconds < 60) {
        la_plural(out, cap,
                  dngettext(LA_TEXT_DOMAIN, "%lld second", "%lld seconds", (unsigned long)seconds),
                  seconds);
        return;
    }
    minutes = seconds / 60 + (seconds % 60 > 0 ? 1 : 0);
    if (minutes < 60 || minutes % 60 != 0) {
        la_plural(out, cap,
                  dngettext(LA_TEXT_DOMAIN, "%lld minute", "%lld minutes", (unsigned long)minutes),
                  minutes);
        return;
    }
    la_plural(out, cap,
              dngettext(LA_TEXT_DOMAIN, "%lld hour", "%lld hours", (unsigned long)(minutes / 60)),
              minutes / 60);
}

static const char *const simple[][2] = {
    {"authenticatedWithFinger", N_("Authenticated with fingerprint")},
    {"authenticatedWithPasscode", N_("Authenticated with passcode")},
    {"authenticatedByRecentSuccess", N_("Authenticated by a recent success")},
    {"policyCanBeEvaluated", N_("The policy can be evaluated")},
    {"fingerNotRecognised", N_("Fingerprint not recognised")},
    {"userChoseFallback", N_("The user chose the fallback")},
    {"timedOutWaitingForFinger", N_("Timed out waiting for a fingerprint")},
    {"timedOutWaitingForPasscode", N_("Timed out waiting for the passcode")},
    {"interactionNotAllowed", N_("Interaction is not allowed")},
    {"passcodeNeededButClientCannotAsk",
     N_("A passcode is needed but this client cannot ask for one")},
    {"noPasscodeAndNoFinger", N_("No passcode is set and no fingerprint can be used")},
    {"noPasscodeSet", N_("No passcode is set")},
    {"noFingerEnrolled", N_("No fingerprint is enrolled for this user")},
    {"fingersOnDisconnectedReader",
     N_("The fingerprint reader your fingers are enrolled on is not connected")},
    {"stateUnreadable", N_("Stored authentication state is unreadable; ask an administrator")},
    {"stateFromNewerVersion",
     N_("Stored authentication state was written by a newer version of localauthd; ask an "
        "administrator")},
    {"attemptNotRecorded",
     N_("The attempt could not be recorded (is the state directory's file system full?); "
        "fingerprint and passcode are refused until it can be")},
    {"enterPasscode", N_("Enter your passcode")},
    {"wrongPasscode", N_("Wrong passcode")},
    {"fallbackUsePasscode", N_("Use passcode")},
    {"fallbackEnterPassword", N_("Enter password")},
    {"currentPasscodeNeeded", N_("The current passcode is needed")},
    {"currentPasscodeWrong", N_("The current passcode is wrong")},
    {"passcodeNotStored", N_("The passcode could not be stored")},
    {"passcodeNotHashed", N_("The passcode could not be hashed")},
    /* Why the finger cannot be used (fingerNotAvailable's argument). */
    {"noReader", N_("no fingerprint reader is connected")},
    {"lidClosed", N_("the laptop lid is closed and the reader is built in")},
    {"remoteSession", N_("the request comes from a remote session")},
    {"connectionOrphaned", N_("the process that opened this connection has exited; connect again")},
    {"requesterUnknown", N_("the calling process could not be identified")},
    {"noLoginSession",
     N_("the request comes from no login session and not from the terminal in front")},
    {"readerBusy", N_("the reader is in use by another account's request")},
    /* The "password required" rules. */
    {"passwordRequiredAfterRestart", N_("Password required after restart")},
    {"passwordRequiredForFirstSession", N_("Password required to start your first session")},
    {"passwordRequiredUseUnknown", N_("Password required: its last use could not be read")},
    {"passwordUseNotRecordedOrphaned",
     N_("Password use not recorded: the process that opened this connection has exited")},
    {"passwordUseNotRecordedRemote",
     N_("Password use not recorded: it comes from a remote session")},
    {"passwordUseNotRecordedNoSession",
     N_("Password use not recorded: a user's own report counts only from inside their active "
        "local session")},
    {"passwordUseNotRecordedNotOwnSession",
     N_("Password use not recorded: it comes from another user's session")},
    {"passwordUseNotRecordedNotActive",
     N_("Password use not recorded: the session is not the active one on its seat")},
};

/* One sentence per finger, as PhraseText.swift: each language inflects the finger's name. */
static const char *const fingers[][2] = {
    {"", N_("Place a finger on the reader")},
    {"left-thumb", N_("Place your left thumb on the reader")},
    {"left-index-finger", N_("Place your left index finger on the reader")},
    {"left-middle-finger", N_("Place your left middle finger on the reader")},
    {"left-ring-finger", N_("Place your left ring finger on the reader")},
    {"left-little-finger", N_("Place your left little finger on the reader")},
    {"right-thumb", N_("Place your right thumb on the reader")},
    {"right-index-finger", N_("Place your right index finger on the reader")},
    {"right-middle-finger", N_("Place your right middle finger on the reader")},
    {"right-ring-finger", N_("Place your right ring finger on the reader")},
    {"right-little-finger", N_("Place your right little finger on the reader")},
};

/* A finger's name on its own. */
static const char *const finger_names[][2] = {
    {"left-thumb", N_("left thumb")},
    {"left-index-finger", N_("left index finger")},
    {"left-middle-finger", N_("left middle finger")},
    {"left-ring-finger", N_("left ring finger")},
    {"left-little-finger", N_("left little finger")},
    {"right-thumb", N_("right thumb")},
    {"right-index-finger", N_("right index finger")},
    {"right-middle-finger", N_("right middle finger")},
    {"right-ring-finger", N_("right ring finger")},
    {"right-little-finger", N_("right little finger")},
};

static const char *const hints[] = {
    N_("Try again"),
    N_("Swipe was too short, try again"),
    N_("Centre your finger on the reader and try again"),
    N_("Remove your finger and try again"),
};

static const char *const cancels[][2] = {
    {"-2", N_("Cancelled by the user")},
    {"-9", N_("Cancelled by the application")},
    {"-4", N_("Cancelled by the system")},
};

#define LA_COUNT(table) (sizeof(table) / sizeof((table)[0]))

static const char *lookup(const char *const (*table)[2], size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, table[i][0]) == 0)
            return table[i][1];
    return NULL;
}

const char *la_simple_line(const char *id)
{
    return lookup(simple, LA_COUNT(simple), id);
}

const char *la_finger_line(const char *finger)
{
    return lookup(fingers, LA_COUNT(fingers), finger);
}

const char *la_finger_name(const char *finger)
{
    return lookup(finger_names, LA_COUNT(finger_names), finger);
}

const char *la_cancel_line(const char *code)
{
    return lookup(cancels, LA_COUNT(cancels), code);
}

const char *la_hint_line(long long n)
{
    return n >= 0 && n < (long long)LA_COUNT(hints) ? hints[n] : NULL;
}
