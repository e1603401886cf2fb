// SPDX-License-Identifier: Apache-2.0
import LocalAuthDaemon

#if canImport(Glibc)
    import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(DaemonOptions.usage)
    exit(0)
}
do {
    let options = try DaemonOptions(arguments: arguments)
    exit(options.checkConfig ? DaemonMain.checkConfiguration(options) : await DaemonMain.run(options))
} catch {
    let text = "localauthd: \(error)\n\(DaemonOptions.usage)\n"
    _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    exit(2)
}
