// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import LocalAuthLocalization
import LocalAuthProtocol

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: tr("List the fingerprint readers."))
    @OptionGroup var connection: ClientOptions
    func run() throws {
        try connection.run(.devices, print: Self.show)
    }

    static func show(_ result: RequestResult) {
        for raw in result.fields.allBytes(.device) {
            guard let d = try? DeviceInfo(field: raw) else { continue }
            var caps: [String] = []
            if d.capabilities.contains(.identify) { caps.append("identify") }
            if d.capabilities.contains(.storage) { caps.append("storage") }
            if d.capabilities.contains(.swipe) { caps.append("swipe") }
            // Names a driver reports reach the terminal printable, as every line from the daemon.
            let (name, driver, id) = (Echo.printable(d.name), Echo.printable(d.driver), Echo.printable(d.deviceId))
            print("\(name)\tdriver=\(driver) id=\(id) stages=\(d.enrollStages) \(caps.joined(separator: ","))")
        }
    }
}
