//! Linear algebra over GF(2) on 64-bit vectors: address functions are XOR
//! masks, and a set of functions is the space they span. Used to find the
//! ties between colour and bank functions ([`crate::AddressMapping::colors_reaching`]),
//! the page-granular part of a DRAM mapping, and by `tinct bench
//! dram-map`'s solver (the functions are the vectors orthogonal to the
//! address differences of pages in one bank, as in Knock-Knock, Wang et
//! al. 2025, and unlike DRAMA's brute force).

/// A basis of a subspace, kept in reduced row echelon form (every
/// vector's highest set bit is set in no other vector).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Basis {
    vectors: Vec<u64>,
}

impl Basis {
    /// The zero space.
    pub fn new() -> Self {
        Self::default()
    }

    /// The span of `vectors`.
    pub fn spanning(vectors: impl IntoIterator<Item = u64>) -> Self {
        let mut basis = Self::new();
        for vector in vectors {
            basis.insert(vector);
        }
        basis
    }

    /// Dimension.
    pub fn rank(&self) -> usize {
        self.vectors.len()
    }

    /// The basis vectors (reduced row echelon form).
    pub fn vectors(&self) -> &[u64] {
        &self.vectors
    }

    /// `vector` reduced by the basis: zero if and only if it is in the span.
    pub fn reduce(&self, mut vector: u64) -> u64 {
        for &pivot in &self.vectors {
            if vector >> leading_bit(pivot) & 1 == 1 {
                vector ^= pivot;
            }
        }
        vector
    }

    /// True if `vector` is in the span.
    pub fn contains(&self, vector: u64) -> bool {
        self.reduce(vector) == 0
    }

    /// Adds `vector` to the span; true if the rank grew.
    pub fn insert(&mut self, vector: u64) -> bool {
        let reduced = self.reduce(vector);
        if reduced == 0 {
            return false;
        }
        let top = leading_bit(reduced);
        for other in &mut self.vectors {
            if *other >> top & 1 == 1 {
                *other ^= reduced;
            }
        }
        self.vectors.push(reduced);
        self.vectors
            .sort_unstable_by_key(|&v| std::cmp::Reverse(leading_bit(v)));
        true
    }

    /// Every vector `f` within `universe` (a mask of the coordinates that
    /// count) with `f · v = 0` (even parity of `f & v`) for every `v` of
    /// this space: its orthogonal complement inside `universe`.
    pub fn orthogonal_within(&self, universe: u64) -> Basis {
        // Restricted to `universe`, the space's vectors in reduced row
        // echelon form have pivots; each free coordinate gives one vector
        // of the complement: itself plus the pivots of rows that read it.
        let rows: Vec<u64> = Basis::spanning(self.vectors.iter().map(|v| v & universe))
            .vectors
            .clone();
        let pivots: u64 = rows.iter().fold(0, |mask, &r| mask | 1 << leading_bit(r));
        let mut complement = Basis::new();
        let mut free = universe & !pivots;
        while free != 0 {
            let bit = free.trailing_zeros();
            free &= free - 1;
            let mut vector = 1u64 << bit;
            for &row in &rows {
                if row >> bit & 1 == 1 {
                    vector |= 1 << leading_bit(row);
                }
            }
            complement.insert(vector);
        }
        complement
    }

    /// A basis of the same space with the fewest set bits (greedy over the
    /// space's vectors by weight, then value: a matroid, so greedy is
    /// optimal), lowest weight first. Spaces up to dimension 20.
    pub fn lightest(&self) -> Vec<u64> {
        let rank = self.rank();
        assert!(
            rank <= 20,
            "dimension {rank}: too many vectors to enumerate"
        );
        let mut all: Vec<u64> = (1u64..1 << rank)
            .map(|selection| {
                (0..rank)
                    .filter(|i| selection >> i & 1 == 1)
                    .fold(0, |acc, i| acc ^ self.vectors[i])
            })
            .collect();
        all.sort_unstable_by_key(|&v| (v.count_ones(), v));
        let mut chosen = Basis::new();
        let mut out = Vec::with_capacity(rank);
        for vector in all {
            if chosen.insert(vector) {
                out.push(vector);
                if out.len() == rank {
                    break;
                }
            }
        }
        out
    }

    /// The part of the space whose vectors have no bit in `excluded` (e.g.
    /// the bits inside a page): its intersection with the coordinate space
    /// of the other bits.
    pub fn without_bits(&self, excluded: u64) -> Basis {
        // Eliminate the excluded coordinates first: order the pivots so
        // that excluded bits are the highest (swap them above by a
        // permutation), then keep the rows with no excluded bit.
        let permute =
            |v: u64| -> u128 { u128::from(v & !excluded) | u128::from(v & excluded) << 64 };
        let mut rows: Vec<u128> = Vec::new();
        for &vector in &self.vectors {
            let mut value = permute(vector);
            for &row in &rows {
                let top = 127 - row.leading_zeros();
                if value >> top & 1 == 1 {
                    value ^= row;
                }
            }
            if value != 0 {
                let top = 127 - value.leading_zeros();
                for row in &mut rows {
                    if *row >> top & 1 == 1 {
                        *row ^= value;
                    }
                }
                rows.push(value);
            }
        }
        Basis::spanning(
            rows.into_iter()
                .filter(|&row| row >> 64 == 0)
                .map(|row| row as u64),
        )
    }
}

/// Position of the highest set bit (`vector` non-zero).
fn leading_bit(vector: u64) -> u32 {
    63 - vector.leading_zeros()
}

/// The parity of `a & b`: the value of XOR function `a` at address `b`.
#[inline]
pub fn parity(a: u64, b: u64) -> u32 {
    (a & b).count_ones() & 1
}

/// A basis of the linear dependencies among `vectors`: each result has
/// bit `i` set for every vector `i` of a combination that XORs to zero (at
/// most 64 vectors).
pub fn dependencies(vectors: &[u64]) -> Vec<u64> {
    // Track which originals each reduced vector combines.
    let mut rows: Vec<(u64, u64)> = Vec::new();
    let mut found = Vec::new();
    for (index, &vector) in vectors.iter().enumerate() {
        let (mut value, mut combination) = (vector, 1u64 << index);
        for &(row, row_combination) in &rows {
            if value >> leading_bit(row) & 1 == 1 {
                value ^= row;
                combination ^= row_combination;
            }
        }
        if value == 0 {
            found.push(combination);
            continue;
        }
        let top = leading_bit(value);
        for (row, row_combination) in &mut rows {
            if *row >> top & 1 == 1 {
                *row ^= value;
                *row_combination ^= combination;
            }
        }
        rows.push((value, combination));
        rows.sort_unstable_by_key(|&(v, _)| std::cmp::Reverse(leading_bit(v)));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_ranks_and_membership() {
        let basis = Basis::spanning([0b1100, 0b0110, 0b1010]);
        assert_eq!(basis.rank(), 2, "the third is the XOR of the first two");
        assert!(basis.contains(0b1010) && !basis.contains(0b0001));
        assert_eq!(basis.reduce(0), 0);
    }

    #[test]
    fn the_orthogonal_complement_annihilates_the_space() {
        // Differences within one bank of functions (14,18) and (15,19)
        // over bits 12..20: their complement is exactly those functions.
        let functions = [1u64 << 14 | 1 << 18, 1 << 15 | 1 << 19];
        let universe = (12..20).fold(0u64, |m, b| m | 1 << b);
        let mut differences = Basis::new();
        for address in 0u64..256 {
            let address = address << 12;
            if functions.iter().all(|&f| parity(f, address) == 0) {
                differences.insert(address);
            }
        }
        let complement = differences.orthogonal_within(universe);
        assert_eq!(complement.rank(), 2);
        assert_eq!(complement.lightest(), functions.to_vec());
        for &f in complement.vectors() {
            for &d in differences.vectors() {
                assert_eq!(parity(f, d), 0);
            }
        }
    }

    #[test]
    fn the_lightest_basis_is_minimal() {
        let basis = Basis::spanning([0b1111_0000, 0b1111_1000, 0b0000_0111]);
        let lightest = basis.lightest();
        assert_eq!(lightest, vec![0b1000, 0b0111, 0b1111_0000]);
        assert_eq!(Basis::spanning(lightest), basis);
    }

    #[test]
    fn the_part_without_sub_page_bits() {
        // (6,13) and (6,17): neither is page-granular, their XOR (13,17) is.
        let space = Basis::spanning([1 << 6 | 1 << 13, 1 << 6 | 1 << 17, 1 << 20]);
        let page = space.without_bits((1 << 12) - 1);
        assert_eq!(page.rank(), 2);
        assert!(page.contains(1 << 13 | 1 << 17) && page.contains(1 << 20));
        assert!(!page.contains(1 << 6 | 1 << 13));
    }

    #[test]
    fn dependencies_name_the_combinations_that_vanish() {
        let deps = dependencies(&[0b0011, 0b0101, 0b0110, 0b1000]);
        assert_eq!(deps, vec![0b0111]);
        assert!(dependencies(&[1, 2, 4]).is_empty());
    }
}
