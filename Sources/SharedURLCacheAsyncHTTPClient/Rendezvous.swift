/// Rendezvous (highest random weight) hashing: each parent gets a score for a key, and the key
/// belongs to the parent with the highest score. Every child computes the same order with no
/// shared state, adding or removing a parent moves only that parent's keys, and when a parent
/// is down its keys spread over the others by their next scores instead of all landing on one.
///
/// The hash must be the same in every process and every release, so it is FNV-1a over the
/// parent's name and the key, finished with SplitMix64's mixer (FNV alone scores the tails of
/// similar URLs too alike); Swift's `Hasher` is seeded per process and would not do.
enum Rendezvous {
    /// The indices of `parents` from the key's owner to its last choice.
    static func order(of parents: [ParentTier.Parent], for key: String) -> [Int] {
        let keyHash = fnv1a(key.utf8, seed: 0xcbf2_9ce4_8422_2325)
        let scores = parents.map { mix(fnv1a($0.description.utf8, seed: keyHash)) }
        // Ties (never seen in practice) go to the earlier parent name, so the order is total.
        return parents.indices.sorted {
            scores[$0] != scores[$1] ? scores[$0] > scores[$1] : parents[$0].description < parents[$1].description
        }
    }

    private static func fnv1a(_ bytes: String.UTF8View, seed: UInt64) -> UInt64 {
        var hash = seed
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return hash
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

extension ParentTier {
    /// The parents in the order a request for `url` (absolute, as the origin's) tries them,
    /// its owner first, whatever their health.
    package func parents(inOrderFor url: String) -> [Parent] {
        Rendezvous.order(of: parents, for: url).map { parents[$0] }
    }
}
