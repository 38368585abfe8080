import Foundation

/// A byte count as people read it: a power of two from 1 KiB in binary units (`64 KiB`, as chunk sizes are
/// named), anything else in decimal units with one decimal (`1.4 GB`), below 1000 in bytes (`512 B`).
///
/// The one formatter of the engine and the CLI's human summaries; JSON keeps exact bytes.
public func formatSize(_ bytes: Int64) -> String {
    if bytes >= 1024 && bytes & (bytes - 1) == 0 {
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = bytes >> 10
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value >>= 10
            unit += 1
        }
        return "\(value) \(units[unit])"
    }
    if bytes < 1000 { return "\(bytes) B" }
    let units = ["kB", "MB", "GB", "TB", "PB", "EB"]
    var value = Double(bytes) / 1000
    var unit = 0
    // Rounding to one decimal may carry to 1000.0: move up a unit then too ("1.0 MB", not "1000.0 kB").
    while value >= 999.95 && unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return String(format: "%.1f %@", value, units[unit])
}
