//! The containers of a document: every object of a `containers` or
//! `initContainers` array, at any depth (a Pod's `spec`, a workload's
//! `spec.template.spec`, a `List`'s items, kinds never heard of). One walk
//! for the manifest reader's tree ([`super::select`]) and the converter's.

/// A node of a JSON tree, as the walk reads it.
pub trait Tree<'v>: Copy {
    /// An object's fields (None: not an object).
    fn fields(self) -> Option<impl Iterator<Item = (&'v str, Self)>>;
    /// An array's items (None: not an array).
    fn items(self) -> Option<impl Iterator<Item = Self>>;
}

/// Each container under `v`, and whether it is in an `initContainers` array.
pub fn containers<'v, T: Tree<'v>>(v: T, found: &mut impl FnMut(bool, T)) {
    if let Some(fields) = v.fields() {
        for (key, value) in fields {
            match value.items() {
                Some(items) if key == "containers" || key == "initContainers" => {
                    items.filter(|c| c.fields().is_some()).for_each(|c| found(key == "initContainers", c));
                }
                _ => containers(value, found),
            }
        }
    } else if let Some(items) = v.items() {
        items.for_each(|item| containers(item, found));
    }
}

impl<'v, 'a> Tree<'v> for &'v super::Json<'a> {
    fn fields(self) -> Option<impl Iterator<Item = (&'v str, Self)>> {
        match self {
            super::Json::Object(fields, _) => Some(fields.iter().map(|(k, v)| (&**k, v))),
            _ => None,
        }
    }
    fn items(self) -> Option<impl Iterator<Item = Self>> {
        match self {
            super::Json::Array(items) => Some(items.iter()),
            _ => None,
        }
    }
}
