import Foundation

/// How long a used item stays "recent" in the working set
/// (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>).
enum RecentItems {
    static let window: Double = 30 * 86_400
}
